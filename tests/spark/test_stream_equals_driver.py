"""`spark-stream`'s windowed joins (inner, left through filter and key_by, outer) on a random
scenario (stream_scenarios.py) give exactly what Spark's streaming rules give there, and differ
from `TestDriver`'s records (the workers') only where those rules say they must.

The three queries run at once on the test session, through streamjoin's Python source,
`PER_BATCH` records of a topic a micro-batch, so each record's micro-batch, and so the
watermark it meets, is known. Spark's records must equal the model's (keys, values, timestamps,
sources), its watermark in each micro-batch the model's, and its count of rows dropped as late
the model's. Then the workers' records: they differ from Spark's only by the records Spark
dropped as late (the workers join a late record with what their stores still keep) and by pairs
whose earlier record had left the workers' store when the later came (Spark keeps rows until
its watermark, a micro-batch behind, passes them)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from json_records import driver_outputs, parquet_outputs, produce
from pyspark.sql import SparkSession
from stream_scenarios import (
    CASES,
    PER_BATCH,
    batches,
    build_app,
    case_rows,
    generate,
    partition_of,
    pipe_order,
    spark_expected,
    topics,
    unexplained,
)

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.spark.stream_run import batch_progress
from streamjoin.spark.streaming import StreamSource, StreamTarget, Trigger, start_stream

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(600)]

SEED = 10
"""A scenario with rows dropped at exactly the watermark, keyless rows dropped as late, and
pairs the workers miss (checked below)."""


def _ms(watermark: str | None) -> int:
    """Spark's progress watermark (ISO 8601, UTC) in epoch milliseconds."""
    assert watermark is not None
    return int(datetime.fromisoformat(watermark).timestamp() * 1000)


def test_windowed_joins_equal_sparks_rules_and_differ_from_the_driver_only_by_them(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    s = uuid.uuid4().hex[:8]
    app, records = build_app(s), generate(SEED, s)
    batch_of = batches(records)
    asyncio.run(ensure_topics(broker.bootstrap, [TopicSpec(t, 2) for t in topics(s)]))
    produced = [(r.topic, r.key, r.value, r.timestamp) for r in records]
    asyncio.run(produce(broker.bootstrap, produced, partition_of))
    derived = frozenset({r.topic.name for r in app.repartitions})

    source = StreamSource(broker.bootstrap, official=False, max_records_per_batch=PER_BATCH)
    queries = {}
    for case in CASES:
        out = tmp_path / case.how
        target = StreamTarget(str(out / "checkpoint"), str(out / "parquet"))
        spec = app.get_join(case.how)
        queries[case.how] = start_stream(
            spark, app, spec, source, target, Trigger(available_now=True)
        )
    for query in queries.values():
        query.awaitTermination()

    piped = pipe_order(records, batch_of)
    driver = driver_outputs(
        app, [(r.topic, r.key, r.value, r.timestamp) for r in piped], partition_of, derived
    )
    features: set[str] = set()
    for case in CASES:
        sides = case_rows(case, app, piped, batch_of)
        expected = spark_expected(case, sides)
        found = parquet_outputs(spark, str(tmp_path / case.how / "parquet"), derived)
        assert found == expected.outputs, (
            case.how,
            found - expected.outputs,
            expected.outputs - found,
        )
        progress = {p.batch_id: p for p in map(batch_progress, queries[case.how].recentProgress)}
        assert [_ms(progress[k].watermark) for k in range(len(expected.watermarks))] == list(
            expected.watermarks
        ), case.how
        late = Counter(row.batch for row in expected.dropped)
        marks = expected.watermarks
        features |= {"at the watermark" for r in expected.dropped if r.t == marks[r.batch]}
        features |= {"keyless" for r in expected.dropped if r.key is None}
        assert {k: p.late_rows for k, p in progress.items() if p.late_rows} == late, case.how
        workers = driver[case.how]
        assert unexplained(case, sides, expected, workers) == [], case.how
        features |= {"missed" for o in found - workers if '"l": null' not in o[1] and o[4]}
    # The scenario has what the rules are about: rows Spark drops (some at exactly the
    # watermark, some keyless), pairs the workers miss.
    assert {"at the watermark", "keyless", "missed"} <= features
