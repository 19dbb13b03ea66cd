"""Backfill over topics on the broker and over their Parquet archives: the same rows; a time
range gives exactly the full result's rows in that range; output written to a topic reads back
the same; archiving with --append adds only what is new."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin import App, JoinWindows
from streamjoin.broker import Broker
from streamjoin.dsl.fields import fields, left, matched, right
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.spark.archive import archive_topic
from streamjoin.spark.backfill import OutputTarget, backfill, write_output
from streamjoin.spark.inputs import Sources, TimeRange
from streamjoin.spark.kafka.io import read_ranges
from streamjoin.spark.kafka.offsets import plan_ranges

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(120)]

START = 1_700_000_000_000


def ads_app(suffix: str) -> App:
    app = App(f"ads-{suffix}")
    impressions = app.topic(f"imp-{suffix}")
    clicks = app.topic(f"clk-{suffix}")
    window = JoinWindows(before=0, after=5_000, grace=1_000)

    def attribute(impression: dict[str, Any], click: dict[str, Any] | None) -> dict[str, Any]:
        delay = None if click is None else click["ts"] - impression["ts"]
        return {"auction": impression["auction"], "delay": delay}

    app.join(impressions, clicks, window=window, how="left", into=f"attr-{suffix}")(attribute)
    app.join(
        impressions,
        clicks,
        window=window,
        how="outer",
        into=f"attr-map-{suffix}",
        name="attribute_map",
    )(fields(auction=left("auction", int), clicked=matched("right"), click_ts=right("ts", int)))
    return app


async def produce(bootstrap: str, suffix: str, auctions: range) -> None:
    """An impression every 10 ms; a third of them clicked 0-6 s later (some outside the window)."""
    rng = random.Random(auctions.start)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for a in auctions:
            ts = START + a * 10
            key = f"a{a}".encode()
            await producer.send(
                f"imp-{suffix}",
                json.dumps({"auction": a, "ts": ts}).encode(),
                key=key,
                timestamp_ms=ts,
            )
            if rng.random() < 0.33:
                click = ts + rng.randrange(6_000)
                await producer.send(
                    f"clk-{suffix}",
                    json.dumps({"auction": a, "ts": click}).encode(),
                    key=key,
                    timestamp_ms=click,
                )
        await producer.flush()
    finally:
        await producer.stop()


def rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r["key"],
            r["value"],
            r["timestamp"],
            r["partition"],
            tuple((h["key"], h["value"]) for h in r["headers"]),
        )
        for r in frame.collect()
    )


@pytest.fixture
async def topics(broker: Broker, unique: str) -> App:
    app = ads_app(unique)
    await ensure_topics(broker.bootstrap, [TopicSpec(f"{t}-{unique}", 2) for t in ("imp", "clk")])
    await produce(broker.bootstrap, unique, range(400))
    return app


def test_backfill_from_kafka_and_from_parquet_archives_give_the_same_rows(
    spark: SparkSession, broker: Broker, topics: App, tmp_path: Path
) -> None:
    spec = topics.joins[0]
    archives = {}
    for topic in spec.input_topics:
        archives[topic] = str(tmp_path / topic)
        archive_topic(spark, broker.bootstrap, topic, archives[topic], append=False)
    from_kafka = rows(backfill(spark, topics, [spec], Sources(broker.bootstrap)).records(spec))
    from_parquet = rows(backfill(spark, topics, [spec], Sources(archives=archives)).records(spec))
    assert from_kafka == from_parquet
    assert len(from_kafka) >= 400  # every impression is in a left join


def test_a_time_range_gives_exactly_the_full_results_in_that_range(
    spark: SparkSession, broker: Broker, topics: App
) -> None:
    spec = topics.joins[0]
    sources = Sources(broker.bootstrap)
    middle = TimeRange(START + 3_000, START + 6_000)
    full = backfill(spark, topics, [spec], sources).records(spec)
    within = full.where(middle.contains(sf.col("timestamp")))
    ranged = rows(backfill(spark, topics, [spec], sources, time_range=middle).records(spec))
    assert ranged == rows(within)
    assert 0 < len(ranged) < full.count()


def test_output_written_to_a_topic_reads_back_the_same(
    spark: SparkSession, broker: Broker, topics: App, unique: str
) -> None:
    spec = topics.joins[1]
    job = backfill(spark, topics, [spec], Sources(broker.bootstrap))
    target = OutputTarget(topic=f"backfilled-{unique}", bootstrap=broker.bootstrap)
    records = job.records(spec).cache()
    write_output(job, spec, records, target)
    written = read_ranges(spark, broker.bootstrap, plan_ranges(broker.bootstrap, [target.topic]))
    expected = [(k, v, ts, h) for k, v, ts, _, h in rows(records)]
    assert [(k, v, ts, h) for k, v, ts, _, h in rows(written)] == expected
    # Records without a key go to their task's partition; keyed ones by key, as the worker does.
    assert written.select("partition").distinct().count() == 2


async def test_archiving_with_append_adds_only_new_records(
    spark: SparkSession, broker: Broker, topics: App, unique: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "imp")
    topic = f"imp-{unique}"
    first = archive_topic(spark, broker.bootstrap, topic, path, append=False)
    await produce(broker.bootstrap, unique, range(400, 500))
    second = archive_topic(spark, broker.bootstrap, topic, path, append=True)
    assert sum(r.size for r in first) == 400
    assert sum(r.size for r in second) == 100
    archived = spark.read.parquet(path)
    assert archived.count() == archived.select("partition", "offset").distinct().count() == 500
