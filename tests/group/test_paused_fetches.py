"""A PartitionFeed's fetched answers against a real broker: a paused partition's answer is kept
for its resume, and no answer it drops (at a pause, at a change of assignment) is left to the
cyclic garbage collector. A worker freezes the collector's survivors: such garbage, up to a
partition's fetch bytes each, would stay until its hourly full collection."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable

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
    holds its answer's bytes and forms a cycle with its iterator)."""
    return sum(
        type(o).__name__ == "PartitionRecords" and o._tp.topic == topic for o in gc.get_objects()
    )


def no_answer_is_garbage(topic: str) -> bool:
    alive = fetched_answers_alive(topic)
    gc.collect()
    return fetched_answers_alive(topic) == alive


class Reading:
    """A feed on a consumer of a topic whose partitions hold RECORDS records each."""

    def __init__(self, feed: PartitionFeed, partitions: list[TopicPartition]) -> None:
        self.feed = feed
        self.partitions = partitions
        self.delivered: dict[TopicPartition, list[int]] = {tp: [] for tp in partitions}

    async def fetch(self, max_records: int | None = None) -> None:
        got = await asyncio.wait_for(self.feed.fetch(timeout_ms=200, max_records=max_records), 30)
        for tp, records in got.items():
            self.delivered[tp] += [r.offset for r in records]

    async def half_read(self, tps: list[TopicPartition]) -> None:
        """A few records of each: their answers are half read."""
        while not all(self.delivered[tp] for tp in tps):
            await self.fetch(10)

    async def read_all(self, tps: list[TopicPartition]) -> None:
        while any(len(self.delivered[tp]) < RECORDS for tp in tps):
            await self.fetch()

    def counts(self) -> dict[TopicPartition, int]:
        return {tp: len(offsets) for tp, offsets in self.delivered.items()}


@pytest.fixture
async def reading(broker: Broker, unique: str) -> AsyncIterator[Callable[[int], Reading]]:
    topic = f"paused-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 3)])
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20)
    await producer.start()
    try:
        sends = [
            await producer.send(topic, b"x" * 100, partition=p)
            for _ in range(RECORDS)
            for p in range(3)
        ]
        await asyncio.gather(*sends)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await consumer.start()

    def make(partitions: int) -> Reading:
        feed = PartitionFeed(consumer)
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        feed.add(dict.fromkeys(tps, 0))
        return Reading(feed, tps)

    try:
        yield make
    finally:
        await consumer.stop()


async def test_a_paused_partition_keeps_its_fetched_answer_and_leaves_no_garbage(
    reading: Callable[[int], Reading],
) -> None:
    read = reading(2)
    tps = read.partitions
    await read.half_read(tps)
    read.feed.pause(tps)
    before = read.counts()
    for _ in range(3):
        await read.fetch()
    assert read.counts() == before
    assert no_answer_is_garbage(tps[0].topic), "a paused partition's answer became garbage"
    read.feed.resume(tps)
    await read.read_all(tps)
    assert read.delivered == {tp: list(range(RECORDS)) for tp in tps}


async def test_a_change_of_assignment_leaves_no_fetched_answer_to_the_collector(
    reading: Callable[[int], Reading],
) -> None:
    read = reading(2)
    first, second = read.partitions
    await read.half_read([first, second])
    third = TopicPartition(first.topic, 2)
    read.feed.add({third: 0})  # aiokafka's assign() drops every answer it holds
    read.delivered[third] = []
    assert no_answer_is_garbage(first.topic), "an answer dropped at the assignment is garbage"
    await read.read_all([first, second, third])
    assert read.delivered == {tp: list(range(RECORDS)) for tp in (first, second, third)}
