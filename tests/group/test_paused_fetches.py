"""Pausing a partition of a PartitionFeed against a real broker: what it had fetched is kept for
its resume, and nothing it drops is left to the cyclic garbage collector (the worker freezes
the collector's survivors: such garbage would stay until its hourly full collection)."""

from __future__ import annotations

import asyncio
import gc

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.group.feed import PartitionFeed
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = pytest.mark.broker

RECORDS = 2_000
"""Per partition: far more than one fetch answer's first few records."""


def fetched_answers_alive(topic: str) -> int:
    """aiokafka's parsed fetch answers of `topic`, referenced or not (PartitionRecords: each
    holds its answer's bytes, up to a partition's fetch size, and forms a cycle with its
    iterator)."""
    return sum(
        type(o).__name__ == "PartitionRecords" and o._tp.topic == topic for o in gc.get_objects()
    )


async def test_a_paused_partition_keeps_its_fetched_answer_and_leaves_no_garbage(
    broker: Broker, unique: str
) -> None:
    topic = f"paused-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    tps = [TopicPartition(topic, p) for p in range(2)]
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20)
    await producer.start()
    try:
        sends = [
            await producer.send(topic, b"x" * 100, partition=p)
            for _ in range(RECORDS)
            for p in range(2)
        ]
        await asyncio.gather(*sends)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    delivered: dict[TopicPartition, list[int]] = {tp: [] for tp in tps}

    async def fetch(max_records: int | None) -> None:
        got = await asyncio.wait_for(feed.fetch(timeout_ms=200, max_records=max_records), 30)
        for tp, records in got.items():
            delivered[tp] += [r.offset for r in records]

    try:
        feed = PartitionFeed(consumer)
        feed.add(dict.fromkeys(tps, 0))
        while not all(delivered.values()):  # a few records of each: both answers half read
            await fetch(10)
        feed.pause(tps)
        before = {tp: len(offsets) for tp, offsets in delivered.items()}
        for _ in range(3):
            await fetch(None)
        assert {tp: len(offsets) for tp, offsets in delivered.items()} == before
        alive = fetched_answers_alive(topic)
        gc.collect()
        assert fetched_answers_alive(topic) == alive, "a paused partition's answer became garbage"
        feed.resume(tps)
        while any(len(offsets) < RECORDS for offsets in delivered.values()):
            await fetch(None)
        assert delivered == {tp: list(range(RECORDS)) for tp in tps}
    finally:
        await consumer.stop()
