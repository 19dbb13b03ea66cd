"""The interpreter local Spark starts its Python processes with: this one, minus Spark's copy of
PySpark's source.

Spark puts $SPARK_HOME/python/lib/pyspark.zip first on every Python worker's path. For a pip
install that zip is the installed package again, as source only: each worker compiles the
PySpark modules it imports afresh (about three times the CPU of importing the installed,
compiled package). Spark waits a fixed 10 s for a new Python process to connect back (its
Python data sources, their writes and planning); on a busy machine the compile alone misses
that. The wrapper drops the zip from PYTHONPATH when it is the installed package's own, so
workers import the same PySpark, compiled once.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import tempfile
from pathlib import Path

import pyspark

from streamjoin.maven_jars import cache_dir

__all__ = ("worker_python",)

_WRAPPER = """#!/bin/sh
# streamjoin: Spark's Python workers, importing PySpark from {package}, not its pyspark.zip
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case "$entry" in
    */pyspark.zip) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
unset IFS
export PYTHONPATH="$kept"
exec {python} "$@"
"""


def _own_zip() -> Path | None:
    """The zip Spark will put on the workers' path, if it is the installed PySpark's."""
    package = Path(pyspark.__file__).resolve().parent
    home = os.environ.get("SPARK_HOME")
    if home is not None and Path(home).resolve() != package:
        return None
    zip_path = package / "python" / "lib" / "pyspark.zip"
    return zip_path if zip_path.is_file() else None


def worker_python() -> str:
    """The wrapper's path (written once per interpreter), or this interpreter when there is
    no zip to drop or no place to write."""
    zip_path = _own_zip()
    if zip_path is None:
        return sys.executable
    script = _WRAPPER.format(package=zip_path.parents[2], python=shlex.quote(sys.executable))
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    path = cache_dir("python-workers") / f"python-{digest}"
    if path.is_file():
        return str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as out:
            out.write(script)
        os.chmod(out.name, 0o755)
        os.replace(out.name, path)
    except OSError:
        return sys.executable
    return str(path)
