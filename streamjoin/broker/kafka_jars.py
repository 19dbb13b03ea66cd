"""The pinned Apache Kafka release's jars: fetched once by Maven into a cache, used by the launcher.

`maven/pom.xml` names the release. `fetch_kafka_jars()` (`make kafka-jars`, and
`streamjoin broker --kafka` on first use) has Maven copy
the broker's jars and their dependencies, checksums verified, into
`~/.cache/streamjoin/kafka-<version>/`. Nothing is fetched at import time or by the library's
launcher, which only says what to run when the jars are missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from streamjoin.broker.errors import BrokerBinaryMissing, BrokerError
from streamjoin.maven_jars import (
    MavenFailed,
    MavenMissing,
    cache_dir,
    copy_dependencies,
    is_complete,
)

__all__ = (
    "KAFKA_POM",
    "fetch_kafka_jars",
    "find_java",
    "kafka_classpath",
    "kafka_jars_dir",
    "kafka_version",
)

KAFKA_POM = Path(__file__).resolve().parent / "maven" / "pom.xml"
"""The Maven file that pins the Apache Kafka release."""

_JAVA_MIN = 17
_FETCH_HINT = "make kafka-jars"


@cache
def kafka_version() -> str:
    """The pinned Apache Kafka release, as the pom names it."""
    found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", KAFKA_POM.read_text())
    if found is None:
        raise BrokerError(f"{KAFKA_POM} names no <kafka.version>")
    return found.group(1).strip()


def kafka_jars_dir() -> Path:
    """Where the pinned release's jars live: $XDG_CACHE_HOME (or ~/.cache)/streamjoin/kafka-V/."""
    return cache_dir(f"kafka-{kafka_version()}")


def kafka_classpath() -> str:
    """The JVM classpath of the fetched jars; says what to run when they are missing."""
    jars = kafka_jars_dir()
    if not is_complete(jars):
        raise BrokerBinaryMissing(
            f"Apache Kafka {kafka_version()}'s jars are not in {jars}: run {_FETCH_HINT} "
            "(needs Maven once)"
        )
    return str(jars / "*")


@cache
def find_java() -> str:
    """Path of a Java 17+ `java` ($JAVA_HOME/bin/java, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not Path(java).is_file():
        raise BrokerBinaryMissing(
            "Apache Kafka needs Java 17 or newer and none was found: install one "
            "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    shown = subprocess.run(
        [java, "-version"], capture_output=True, text=True, check=False, timeout=30
    ).stderr
    version = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    major = int(version.group(1)) if version else 0
    if major == 1 and version and version.group(2):  # "1.8.0" is Java 8
        major = int(version.group(2))
    if major < _JAVA_MIN:
        raise BrokerBinaryMissing(
            f"Apache Kafka needs Java {_JAVA_MIN} or newer; {java} is "
            f"{version.group(0) if version else 'of unknown version'}: install Java 17+"
        )
    return java


def fetch_kafka_jars(*, quiet: bool = True) -> Path:
    """Have Maven copy the pinned release's jars into the cache, once; returns the directory."""
    what = f"Apache Kafka {kafka_version()}'s jars"
    try:
        return copy_dependencies(KAFKA_POM, kafka_jars_dir(), what, quiet=quiet)
    except MavenMissing as exc:
        raise BrokerBinaryMissing(f"{exc} and run {_FETCH_HINT}") from None
    except MavenFailed as exc:
        raise BrokerError(str(exc)) from None


def main() -> None:
    """`make kafka-jars`: check Java, fetch the jars once, print their directory."""
    try:
        find_java()
        print(fetch_kafka_jars())
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
