"""The interpreter local Spark starts its Python workers with: the installed PySpark instead of
Spark's source zip of it, and everything else on PYTHONPATH kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from streamjoin.spark.worker_python import worker_python

PACKAGE = Path(pyspark.__file__).resolve().parent
ZIP = PACKAGE / "python" / "lib" / "pyspark.zip"
SHOW_PATHS = "import sys, pyspark; print(pyspark.__file__); print(sys.path)"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARK_HOME", raising=False)


@pytest.mark.skipif(not ZIP.is_file(), reason="this PySpark has no pyspark.zip")
def test_workers_import_the_installed_pyspark_and_keep_the_rest_of_the_path(
    tmp_path: Path,
) -> None:
    python = worker_python()
    assert python != sys.executable
    assert worker_python() == python  # written once
    (tmp_path / "a dir, globbed").mkdir()
    odd = f"{tmp_path}/a dir*"  # a space, and a pattern that matches a directory
    env = {**os.environ, "PYTHONPATH": f"{ZIP}:{tmp_path}:{odd}"}
    done = subprocess.run(
        [python, "-c", SHOW_PATHS], env=env, capture_output=True, text=True, check=True
    )
    module, path = done.stdout.splitlines()
    assert Path(module).resolve() == PACKAGE / "__init__.py"
    assert str(ZIP) not in path
    assert repr(str(tmp_path)) in path and repr(odd) in path


def test_another_spark_home_keeps_this_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert worker_python() == sys.executable


def test_no_place_to_write_keeps_this_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    assert worker_python() == sys.executable
