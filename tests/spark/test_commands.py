"""The Spark commands end to end, in-process on the test session: archive the inputs, backfill
from the archives, and audit the worker's output (clean: exit 0; nothing written: exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from engines import WorkerRun, by_join, result_of
from join_cases import build_app
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from streamjoin.cli import app
from streamjoin.spark.records import RECORD_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(300)]

runner = CliRunner()


def app_dir(tmp_path: Path, suffix: str) -> tuple[str, str]:
    """A module declaring the cases app of `suffix`, as a user's app module would."""
    module = f"cases_{suffix}"
    (tmp_path / f"{module}.py").write_text(
        f"from join_cases import build_app\n\napp = build_app({suffix!r})\n"
    )
    return f"{module}:app", str(tmp_path)


def test_archive_then_backfill_from_the_archives(
    spark: SparkSession, worker_run: WorkerRun, tmp_path: Path
) -> None:
    spec = build_app(worker_run.suffix).get_join("grace_map")
    archives = []
    for topic in spec.input_topics:
        path = str(tmp_path / topic)
        result = runner.invoke(
            app, ["archive", topic, "--to", path, "--bootstrap", worker_run.bootstrap]
        )
        assert result.exit_code == 0, result.output
        assert "archived 3 offsets" in result.output
        archives += ["--archive", f"{topic}={path}"]
    reference, directory = app_dir(tmp_path, worker_run.suffix)
    output = str(tmp_path / "out")
    command = ["backfill", reference, "--app-dir", directory, "--join", spec.name, *archives]
    result = runner.invoke(app, [*command, "--output", output])
    assert result.exit_code == 0, result.output
    backfilled = [
        result_of(
            spec.name,
            r["key"],
            r["value"],
            r["timestamp"],
            {h["key"]: h["value"] for h in r["headers"]},
        )
        for r in spark.read.parquet(output).collect()
    ]
    assert by_join(backfilled)[spec.name] == worker_run.written[spec.name]
    again = runner.invoke(app, [*command, "--output", output])
    assert again.exit_code == 2
    assert "--overwrite" in again.output


def test_audit_exits_0_when_clean_and_1_when_records_are_missing(
    spark: SparkSession, worker_run: WorkerRun, tmp_path: Path
) -> None:
    reference, directory = app_dir(tmp_path, worker_run.suffix)
    spec = build_app(worker_run.suffix).get_join("outer_map")
    command = ["audit", reference, "--app-dir", directory, "--join", spec.name]
    command += ["--bootstrap", worker_run.bootstrap, "--from", "0", "--to", "10000"]
    clean = runner.invoke(app, command)
    assert clean.exit_code == 0, clean.output
    # A field mapping's join, its closing pair (at 1,000,000) out of the range.
    assert "3 expected, 3 written, 3 matched" in clean.output
    empty = str(tmp_path / "empty")
    spark.createDataFrame([], RECORD_SCHEMA).write.parquet(empty)
    lost = runner.invoke(app, [*command, "--archive", f"{spec.into.name}={empty}"])
    assert lost.exit_code == 1, lost.output
    assert "FAILED" in lost.output
