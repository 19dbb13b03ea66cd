"""Audit against what a real worker wrote for the shared join cases: a clean run is clean (late
records included), a deleted, a duplicated and a changed output record are found in an archive
of the output topic, and input the worker has not seen yet is pending.
(tests/spark/test_commands.py audits a field-mapping join within a time range.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from engines import WorkerRun
from join_cases import build_app
from pyspark.sql import SparkSession

from streamjoin.spark.archive import archive_topic
from streamjoin.spark.audit.job import audit
from streamjoin.spark.inputs import Sources

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(300)]


def test_a_clean_run_with_late_records_is_clean(spark: SparkSession, worker_run: WorkerRun) -> None:
    """The late case: r-late joins l1 (its store still keeps it), l-late comes out at once with
    None, as the worker did."""
    app = build_app(worker_run.suffix)
    sources = Sources(worker_run.bootstrap)
    report = audit(spark, app, app.get_join("late_fn"), app.app_id, sources)
    assert report.counts == dict.fromkeys(
        ("missing", "extra", "different", "duplicate", "not_yet_emitted"), 0
    )
    assert not report.failed
    assert report.expected == report.written == report.matched == 4


def test_a_deleted_a_duplicated_and_a_changed_record_are_found(
    spark: SparkSession, worker_run: WorkerRun, tmp_path: Path
) -> None:
    app = build_app(worker_run.suffix)
    spec = app.get_join("duplicates_fn")
    archived = f"{tmp_path}/archived"
    tampered = f"{tmp_path}/tampered"
    archive_topic(spark, worker_run.bootstrap, spec.into.name, archived, append=False)
    records = spark.read.parquet(archived).orderBy("offset").collect()
    assert len(records) == 5
    deleted, duplicated, changed = records[0], records[1], records[2]
    value = json.loads(changed["value"])
    value["sum"] += 1
    rows = [r.asDict() for r in records if r is not deleted] + [duplicated.asDict()]
    for row in rows:
        if row["offset"] == changed["offset"]:
            row["value"] = json.dumps(value).encode()
    frame = spark.createDataFrame(rows, spark.read.parquet(archived).schema)
    frame.write.parquet(tampered)
    sources = Sources(worker_run.bootstrap, archives={spec.into.name: tampered})
    report = audit(spark, app, spec, app.app_id, sources)
    assert report.failed
    assert {k: v for k, v in report.counts.items() if v} == {
        "missing": 1,
        "duplicate": 1,
        "different": 1,
    }
    deleted_left = next(h["value"] for h in deleted["headers"] if h["key"] == "streamjoin.left")
    assert deleted_left.decode() in report.examples["missing"][0]


async def test_input_the_worker_has_not_processed_is_not_yet_emitted(
    spark: SparkSession, worker_run: WorkerRun
) -> None:
    app = build_app(worker_run.suffix)
    spec = app.get_join("empty-right_fn")
    producer = AIOKafkaProducer(bootstrap_servers=worker_run.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            spec.left.name, b'{"id": "new", "n": 1}', key=b"q", partition=0, timestamp_ms=500
        )
    finally:
        await producer.stop()
    report = audit(spark, app, spec, app.app_id, Sources(worker_run.bootstrap))
    assert {k: v for k, v in report.counts.items() if v} == {"not_yet_emitted": 1}
    assert not report.failed
