"""The shared join cases through the test driver, Spark batch and the worker on the broker:
identical output sets (keys, values, timestamps and provenance headers)."""

from __future__ import annotations

from collections import Counter

import pytest
from engines import WorkerRun, pairs, run_driver, run_spark
from join_cases import CASES, JOINERS, build_app, join_name
from pyspark.sql import SparkSession

from streamjoin.spark.pipeline import JoinOptions

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

CASES_BY_NAME = {case.name: case for case in CASES}


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


def test_spark_batch_dropping_late_records_equals_the_test_driver(spark: SparkSession) -> None:
    """Except the "late" case: since issue 34 the workers join late records as Kafka Streams
    does, and Spark's `drop_late` (spark/stream_time.py) still models their old drop; aligning
    it is the Spark side's work (notes/sem.md says what)."""
    app = build_app("same")
    driver = run_driver(app, "same")
    batch = run_spark(spark, app, "same", JoinOptions(drop_late=True))
    late = {join_name(CASES_BY_NAME["late"], joiner) for joiner in JOINERS}
    assert {k: v for k, v in batch.items() if k not in late} == {
        k: v for k, v in driver.items() if k not in late
    }
    assert pairs(batch["late_fn"]) == {("l1", None), ("lz", None)}  # the old drop, for now
    for case in CASES:
        fn, mapped = batch[join_name(case, "fn")], batch[join_name(case, "map")]
        assert Counter(r[1:] for r in fn.elements()) == Counter(r[1:] for r in mapped.elements())


def test_final_answer_through_the_python_path_of_every_joiner(spark: SparkSession) -> None:
    """Without dropping late records, batch gives the final answer; running the field
    mappings as Python functions gives the same rows as the native columns (checked against
    the driver, which the native columns equal)."""
    app = build_app("final")
    driver = run_driver(app, "final")
    final = run_spark(spark, app, "final", JoinOptions(python_joiner=True))
    for case in CASES:
        for joiner in JOINERS:
            name = join_name(case, joiner)
            if case.name != "late":
                assert final[name] == driver[name], name
    # r-late joins l1 after all, and l-late is a non-match instead of being dropped.
    late = {("l1", "r-late"), ("lz", None), ("l-late", None)}
    assert pairs(final["late_fn"]) == pairs(final["late_map"]) == late


def test_the_worker_on_the_broker_equals_the_test_driver(worker_run: WorkerRun) -> None:
    expected = run_driver(build_app(worker_run.suffix), worker_run.suffix)
    assert worker_run.written == expected, worker_run.log_tail
    assert worker_run.exit_code == 0, worker_run.log_tail
