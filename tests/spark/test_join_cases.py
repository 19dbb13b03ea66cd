"""The shared join cases through the test driver, Spark batch and the worker on the broker:
identical output sets (keys, values, timestamps and provenance headers). (Random scenarios of
every join kind: test_spark_equals_driver.py.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from engines import WorkerRun, case_archive, pairs, run_driver, run_spark
from join_cases import CASES, JOINERS, build_app, join_name
from pyspark.sql import SparkSession

from streamjoin.spark.graph import AppJob
from streamjoin.spark.inputs import Sources

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def test_cases_are_listed_in_processing_order() -> None:
    """Each case's records are in the order a task takes them (lowest head timestamp first,
    left on ties), so the driver, which takes them as piped, sees what the worker sees."""
    for case in CASES:
        heads: dict[str, int] = {}
        order = []
        for index, record in enumerate(case.all_records):
            heads[record.side] = max(heads.get(record.side, record.ts), record.ts)
            order.append((heads[record.side], record.side != "L", index))
        assert sorted(order) == order, case.name


def test_driver_gives_each_cases_expected_results() -> None:
    app = build_app("driver")
    results = run_driver(app, "driver")
    for case in CASES:
        for joiner in JOINERS:
            assert pairs(results[join_name(case, joiner)]) == case.expected, (case.name, joiner)


def test_spark_batch_equals_the_test_driver(spark: SparkSession, tmp_path: Path) -> None:
    """Function joiners (Python on Spark) and field mappings (native columns) alike."""
    app = build_app("same")
    driver = run_driver(app, "same")
    job = AppJob(spark, app, Sources(archives=case_archive("same", tmp_path / "cases")))
    batch = run_spark(app, job)
    assert batch == driver
    for case in CASES:
        fn, mapped = batch[join_name(case, "fn")], batch[join_name(case, "map")]
        assert Counter(r[1:] for r in fn.elements()) == Counter(r[1:] for r in mapped.elements())


def test_the_worker_on_the_broker_equals_the_test_driver(worker_run: WorkerRun) -> None:
    expected = run_driver(build_app(worker_run.suffix), worker_run.suffix)
    assert worker_run.written == expected, worker_run.log_tail
    assert worker_run.exit_code == 0, worker_run.log_tail
