"""Poison records on both inputs of a running worker, among good traffic: every good pair is
joined, nothing wrong comes out, and each bad record is in the dead-letter topic with its
reason (the drill of the failure-behaviour issue)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import worker_processes as processes
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

GOOD = 2_000
T0 = processes.EVENT_T0
BIG = 3_000_000
# Topics that take what a broken producer can send: large values, any timestamp.
LENIENT = {"max.message.bytes": str(8 * 1024 * 1024), "message.timestamp.after.max.ms": str(2**62)}


def poison(side: str, other: str) -> list[tuple[str, bytes | None, bytes | None, int, str]]:
    """(topic, key, value, timestamp, expected error class) on `side`; a joiner error needs a
    good record on `other` with the same key."""
    t = T0
    ok = json.dumps({"auction": -1, "ts": t}).encode()
    tag = side.split("-", maxsplit=1)[
        0
    ].encode()  # keys of its own: the pairs of one side never meet the other's
    rows = [
        (side, b"p-notjson", b"{not json", t, "SerdeError"),
        (side, b"p-empty", b"", t, "SerdeError"),
        (side, b"p-bytes", b"\xff\xfe\x00\x81", t, "SerdeError"),
        (side, None, ok, t, "KeylessRecordError"),
        (side, b"p-future", ok, 41_024_448_000_000, "InvalidTimestampError"),
        (side, b"p-big", json.dumps("x" * BIG).encode(), t, "RecordTooLargeError"),
        (side, b"p-types", json.dumps({"auction": "x", "ts": "y"}).encode(), t, "TypeError"),
        (other, b"p-types", ok, t, ""),
        (side, b"p-missing", b"{}", t, "KeyError"),
        (other, b"p-missing", ok, t, ""),
    ]
    return [
        (topic, key and key + b"-" + tag, value, ts, why) for topic, key, value, ts, why in rows
    ]


async def send_poison(
    bootstrap: str, records: list[tuple[str, bytes | None, bytes | None, int, str]]
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=8 * 1024 * 1024)
    await producer.start()
    try:
        for topic, key, value, timestamp, _ in records:
            await producer.send_and_wait(
                topic, value, key=key, timestamp_ms=timestamp, partition=0 if key is None else None
            )
    finally:
        await producer.stop()


async def read_all(bootstrap: str, topic: str, partitions: int) -> list[object]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        found: list[object] = []
        while batch := await consumer.getmany(timeout_ms=1_500):
            for records in batch.values():
                found.extend(records)
        return found
    finally:
        await consumer.stop()


async def test_poison_on_every_input_goes_to_the_dead_letter_topic_with_its_reason(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    partitions = processes.PARTITIONS
    await ensure_topics(
        bootstrap,
        [
            TopicSpec(f"{name}-{unique}", partitions, LENIENT)
            for name in ("impressions", "clicks", "attributed")
        ],
    )
    impressions, clicks = f"impressions-{unique}", f"clicks-{unique}"
    bad = poison(impressions, clicks) + poison(clicks, impressions)
    workers = processes.Workers(bootstrap, unique, tmp_path)
    workers.start("w1")
    try:
        # Poison first, stamped at the start of the good traffic's event time: a bad record
        # must not hold back, end or poison what follows.
        await send_poison(bootstrap, bad)
        await processes.produce(bootstrap, unique, range(GOOD), pace_s=0)
        seen = await processes.read_joined(bootstrap, unique, want=GOOD, within_s=90)
        dead = await read_all(bootstrap, f"e2e-{unique}-dlq", partitions)
        joined = await read_all(bootstrap, f"attributed-{unique}", partitions)
    finally:
        codes = workers.stop_all()
    missing = sorted(set(range(GOOD)) - set(seen))
    assert not missing, f"missing {missing[:30]} of {GOOD}\n{workers.logs()}"
    assert all(r.key is None or not r.key.startswith(b"p-") for r in joined), "no poison joined"  # type: ignore[attr-defined]
    reasons = Counter(dict(r.headers)["streamjoin.error.class"].decode() for r in dead)  # type: ignore[attr-defined]
    expected = Counter(reason for *_, reason in bad if reason)
    assert reasons == expected, workers.logs()
    big = [r for r in dead if dict(r.headers)["streamjoin.error.class"] == b"RecordTooLargeError"]  # type: ignore[attr-defined]
    assert all(r.value is None for r in big)  # type: ignore[attr-defined]
    assert codes == {"w1": 0}, workers.logs()
