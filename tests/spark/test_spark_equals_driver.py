"""Spark batch equals `streamjoin.testing.TestDriver` on random scenarios of every join kind
Spark runs (scenarios.py): the same output records, keys, values, timestamps and provenance
headers, topic by topic, with the records piped to the driver in the order Spark assumes.

One Spark job computes every join of the scenario app for several seeds at once (each seed's
records in an archive of its own run), so the module costs one job's time."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from engines import write_archive
from pyspark.sql import SparkSession
from scenarios import Piped, build_app, generate, processing_order

from streamjoin.dsl.app import App
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.spark.graph import AppJob
from streamjoin.spark.inputs import Sources
from streamjoin.spark.order import source_ranks
from streamjoin.testing import TestDriver

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SEEDS = (1,)

Output = tuple[str, str | None, str | None, int, str | None, str | None]


def _derived(app: App) -> set[str]:
    """Topics whose records' offsets Spark cannot know: repartition topics and join outputs
    read by another join."""
    read = {t for spec in app.joins for t in spec.input_topics}
    return {r.topic.name for r in app.repartitions} | ({s.into.name for s in app.joins} & read)


def _source(header: bytes | None, derived: set[str]) -> str | None:
    if header is None:
        return None
    text = header.decode()
    topic, partition, _ = text.rsplit(":", 2) if text.count(":") >= 2 else (*text.split(":"), "")
    return f"{topic}:{partition}" if topic in derived else text


def _output(
    topic: str,
    key: bytes | None,
    value: bytes | None,
    ts: int,
    headers: dict[str, bytes],
    derived: set[str],
) -> Output:
    return (
        topic,
        None if key is None else key.decode(),
        None if value is None else json.dumps(json.loads(value), sort_keys=True),
        ts,
        _source(headers.get(LEFT_SOURCE_HEADER), derived),
        _source(headers.get(RIGHT_SOURCE_HEADER), derived),
    )


def _driver_outputs(app: App, records: dict[str, list[Piped]]) -> Counter[Output]:
    derived = _derived(app)
    found: Counter[Output] = Counter()
    with TestDriver(app) as driver:
        for record in processing_order(records, source_ranks(app)):
            driver.pipe_raw(
                record.topic,
                record.raw_value,
                key=record.raw_key,
                timestamp=record.timestamp,
                partition=record.partition,
            )
        for spec in app.joins:
            if spec.foreign_key is not None and spec.foreign_key.side == "right":
                continue
            for out in driver._sink.records[spec.into.name]:
                found[
                    _output(
                        out.topic, out.key, out.value, out.timestamp, dict(out.headers), derived
                    )
                ] += 1
    return found


def _archive(records: dict[str, list[Piped]], path: Path) -> dict[str, str]:
    """Every topic's records in one Parquet archive."""
    rows = [
        (r.raw_key, r.raw_value, topic, r.partition, r.offset, r.timestamp, [])
        for topic, piped in records.items()
        for r in piped
    ]
    return dict.fromkeys(records, write_archive(rows, path))


def _spark_outputs(spark: SparkSession, app: App, archives: dict[str, str]) -> list[Any]:
    job = AppJob(spark, app, Sources(archives=archives))
    specs = [s for s in app.joins if s.foreign_key is None or s.foreign_key.side == "left"]
    job.prepare(specs)
    frames = [job.output(spec).selectExpr(f"'{spec.into.name}' as topic", "*") for spec in specs]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union.collect()


def test_spark_batch_equals_the_test_driver_on_random_scenarios(
    spark: SparkSession, tmp_path: Path
) -> None:
    app = build_app()
    derived = _derived(app)
    for seed in SEEDS:
        records = generate(seed)
        expected = _driver_outputs(app, records)
        archives = _archive(records, tmp_path / str(seed))
        found: Counter[Output] = Counter(
            _output(
                row["topic"],
                row["key"],
                row["value"],
                row["timestamp"],
                {h["key"]: bytes(h["value"]) for h in row["headers"]},
                derived,
            )
            for row in _spark_outputs(spark, app, archives)
        )
        by_topic = sorted({o[0] for o in expected} | {o[0] for o in found})
        for topic in by_topic:
            want = Counter({o: n for o, n in expected.items() if o[0] == topic})
            got = Counter({o: n for o, n in found.items() if o[0] == topic})
            assert got == want, (
                seed,
                topic,
                sorted((got - want).elements()),
                sorted((want - got).elements()),
            )
