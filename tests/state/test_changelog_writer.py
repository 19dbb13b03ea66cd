"""Changelog batches: in order, confirmed offsets, delivery failures surfaced."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaTimeoutError

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.errors import ChangelogWriteError


class SmallBatch:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def append(self, *, key: bytes, value: bytes | None, timestamp: int) -> object | None:
        if len(self.records) == 2:
            return None
        self.records.append((key, value))
        return object()


class FailingProducer:
    """Accepts batches, then fails every delivery."""

    def __init__(self) -> None:
        self.sent: list[SmallBatch] = []

    def create_batch(self) -> SmallBatch:
        return SmallBatch()

    async def send_batch(self, batch: SmallBatch, topic: str, *, partition: int) -> Any:
        self.sent.append(batch)
        delivery = asyncio.get_running_loop().create_future()
        delivery.set_exception(KafkaTimeoutError())
        return delivery


async def test_a_failed_delivery_raises_changelog_write_error() -> None:
    producer = FailingProducer()
    writer = ChangelogWriter(producer, "app-s-changelog", 3)
    for i in range(5):
        writer.append(b"k%d" % i, b"v")
    with pytest.raises(
        ChangelogWriteError, match=r"'app-s-changelog' partition 3.*KafkaTimeoutError"
    ):
        await writer.wait_confirmed(writer.seal())
    assert [len(batch.records) for batch in producer.sent] == [2, 2, 1]
    assert writer.confirmed_offset is None
    await writer.close()


async def test_nothing_to_confirm_before_the_first_write() -> None:
    writer = ChangelogWriter(FailingProducer(), "t", 0)
    assert await writer.wait_confirmed(writer.seal()) is None
    await writer.close()


@pytest.mark.broker
async def test_batches_arrive_in_order_and_offsets_are_confirmed(
    broker: Broker, unique: str
) -> None:
    topic = f"writer-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, max_batch_size=2048)
    await producer.start()
    try:
        writer = ChangelogWriter(producer, topic, 1)
        first = [(b"k%d" % i, b"v%d" % i) for i in range(500)]
        for key, value in first:
            writer.append(key, value, timestamp=1_000 + len(key))
        mark = writer.seal()
        writer.append(b"late", None)  # after the mark: not awaited, still sent in order
        assert await writer.wait_confirmed(mark) == 500
        assert await writer.wait_confirmed(writer.seal()) == 501
        await writer.close()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 1)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen: list[tuple[bytes, bytes | None]] = []
        while len(seen) < 501:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                seen.extend((record.key, record.value) for record in records)
        assert seen == [*first, (b"late", None)]
    finally:
        await consumer.stop()
