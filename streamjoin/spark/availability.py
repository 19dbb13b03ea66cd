"""Whether the Spark engine can run here, and what to install when it cannot.

Importable without pyspark, so the command line can explain instead of failing on an import.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

__all__ = ("INSTALL_HINT", "java_missing", "pyspark_missing")

INSTALL_HINT = "pip install 'streamjoin[spark]'"


def pyspark_missing() -> str | None:
    """Why PySpark cannot be imported, or None when it can."""
    if importlib.util.find_spec("pyspark") is None:
        return f"PySpark is not installed; install the Spark extra: {INSTALL_HINT}"
    return None


def java_missing() -> str | None:
    """Why Spark's JVM cannot start for lack of Java, or None when a java binary is found."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return None
    if shutil.which("java"):
        return None
    return "Spark needs Java 17 or newer: no java on PATH and JAVA_HOME is not set"
