"""Jars fetched once by Maven into streamjoin's cache: what Apache Kafka's broker and Spark's
Kafka connector need, each named by a pom in the package.

Maven copies a pom's dependencies, checksums verified, into a staging directory that is renamed
into place when complete, so a cache directory is either whole (it holds `.complete`) or absent.
Nothing is fetched at import time; only the explicit steps (`make kafka-jars`,
`make spark-kafka-jars`) and a command's first use call `copy_dependencies`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from streamjoin.errors import StreamJoinError

__all__ = ("MavenFailed", "MavenMissing", "cache_dir", "copy_dependencies", "is_complete")

_COMPLETE = ".complete"


class MavenMissing(StreamJoinError):
    """No `mvn` to fetch jars with."""


class MavenFailed(StreamJoinError):
    """Maven ran and could not fetch the jars."""


def cache_dir(name: str) -> Path:
    """$XDG_CACHE_HOME (or ~/.cache)/streamjoin/NAME."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "streamjoin" / name


def is_complete(directory: Path) -> bool:
    return (directory / _COMPLETE).is_file()


def copy_dependencies(
    pom: Path,
    target: Path,
    what: str,
    properties: Mapping[str, str] | None = None,
    *,
    quiet: bool = True,
) -> Path:
    """Have Maven copy `pom`'s dependencies (with `properties` as -D settings) into `target`,
    once; returns `target`. `what` names the jars in error messages."""
    if is_complete(target):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenMissing(
            f"fetching {what} needs Maven once: install it (e.g. apt-get install maven)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    command = [mvn, "-B", "--strict-checksums", "-f", str(pom)]
    command += ["-q"] if quiet else []
    command += [f"-D{key}={value}" for key, value in (properties or {}).items()]
    command += ["dependency:copy-dependencies", f"-DoutputDirectory={staging}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            plain = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
            lines = plain.strip().splitlines()
            errors = [line for line in lines if line.startswith("[ERROR]") and line[8:].strip()]
            reason = errors[0].removeprefix("[ERROR]").strip() if errors else " | ".join(lines[-5:])
            raise MavenFailed(f"Maven could not fetch {what} (exit {done.returncode}): {reason}")
        (staging / _COMPLETE).write_text(f"{what}\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
