"""Small scenarios of JSON records for the streaming tests: records produced one at a time (so
their offsets follow the list), and output records reduced to comparable tuples, the same from
`TestDriver` and from Spark's Parquet."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaProducer
from pyspark.sql import SparkSession

from streamjoin import App
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.testing import TestDriver

Record = tuple[str, str | None, dict[str, Any] | None, int]
"""topic, key, value, timestamp"""
Output = tuple[str | None, str, int, str | None, str | None]
"""key, value (JSON, keys sorted), timestamp, left source, right source"""


async def produce(
    bootstrap: str, records: Iterable[Record], partition: Callable[[Record], int]
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for record in records:  # one at a time: the offsets follow this order
            topic, key, value, ts = record
            await producer.send_and_wait(
                topic,
                None if value is None else json.dumps(value).encode(),
                key=None if key is None else key.encode(),
                partition=partition(record),
                timestamp_ms=ts,
            )
    finally:
        await producer.stop()


def output(
    key: Any, value: Any, ts: int, headers: dict[str, Any], derived: frozenset[str] = frozenset()
) -> Output:
    """A record's tuple; a source in a topic of `derived` (whose offsets Spark cannot know: a
    repartition topic, a join's output) as "topic:partition"."""
    if isinstance(key, bytes | bytearray):
        key = key.decode()
    text = value if isinstance(value, str) else bytes(value).decode()

    def source(name: str) -> str | None:
        found = headers.get(name)
        if found is None:
            return None
        full = bytes(found).decode()
        topic, partition = full.split(":")[:2]
        return f"{topic}:{partition}" if topic in derived else full

    normal = json.dumps(json.loads(text), sort_keys=True)
    return (key, normal, ts, source(LEFT_SOURCE_HEADER), source(RIGHT_SOURCE_HEADER))


def parquet_outputs(
    spark: SparkSession, path: str, derived: frozenset[str] = frozenset()
) -> Counter[Output]:
    """The records a query wrote as Parquet at `path` (backfill's layout)."""
    return Counter(
        output(
            r["key"],
            r["value"],
            r["timestamp"],
            {h["key"]: h["value"] for h in r["headers"]},
            derived,
        )
        for r in spark.read.parquet(path).collect()
    )


def driver_outputs(
    app: App,
    records: Iterable[Record],
    partition: Callable[[Record], int],
    derived: frozenset[str] = frozenset(),
) -> dict[str, Counter[Output]]:
    """Each join's output records from `TestDriver`, `records` piped in their order."""
    with TestDriver(app) as driver:
        for record in records:
            topic, key, value, ts = record
            driver.pipe(topic, value, key=key, timestamp=ts, partition=partition(record))
        return {
            spec.name: Counter(
                output(r.key, json.dumps(r.value), r.timestamp, r.headers, derived)
                for r in driver.read_output(spec.into.name)
            )
            for spec in app.joins
        }
