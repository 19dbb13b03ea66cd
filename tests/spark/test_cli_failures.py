"""The Spark commands fail in one line, never with a traceback: a joiner that raises on Spark's
workers (its stack trace would be in Spark's log, which the commands keep off), a broker that
cannot be reached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from streamjoin.cli import app as cli
from streamjoin.spark.records import arrow_batch

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

APP = """
from streamjoin import App, JoinWindows

app = App("failing", on_error="fail")
sides = [app.topic(name, value_type=str) for name in ("boom-l", "boom-r")]


@app.join(*sides, window=JoinWindows.of(100), into=app.topic("boom-out", value_type=str))
def boom(left, right):
    raise ValueError(f"no joining {left} and {right}")
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "failing_app.py").write_text(APP)
    return tmp_path


def _archive(path: Path, topic: str) -> str:
    """A Parquet archive of one record, written without Spark."""
    path.mkdir()
    columns = {"key": [b"k"], "value": [b"x"], "topic": [topic], "partition": [0]}
    columns |= {"offset": [0], "timestamp": [1_000], "headers": [[]]}
    pq.write_table(pa.Table.from_batches([arrow_batch(columns)]), path / "part-0.parquet")
    return str(path)


def test_a_joiner_raising_on_the_workers_is_one_line_without_spark_s_log(
    app_dir: Path, tmp_path: Path
) -> None:
    """Run first in this file, before the test session's Spark exists: one JVM at a time."""
    archives = [f"--archive={t}={_archive(tmp_path / t, t)}" for t in ("boom-l", "boom-r")]
    command = ["backfill", "failing_app:app", "--join", "boom", *archives]
    done = subprocess.run(
        [str(Path(sys.executable).with_name("streamjoin")), *command, "--output", "out"],
        cwd=app_dir,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: backfill of join 'boom' failed: ValueError: no joining x and x "
        "(Spark's log: --conf spark.log.level=WARN)"
    )


def test_an_unreachable_broker_is_one_line(spark: SparkSession, app_dir: Path) -> None:
    command = ["audit", "failing_app:app", "--app-dir", str(app_dir), "--join", "boom"]
    result = CliRunner().invoke(cli, [*command, "--bootstrap", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "127.0.0.1:1" in result.output
