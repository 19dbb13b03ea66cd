"""Output records in batches per partition: where `send` would put them, in order, and a failed
delivery surfaced by the next flush."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaTimeoutError
from aiokafka.partitioner import DefaultPartitioner

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.output.producer_sink import DeliveryError, ProducerSink
from streamjoin.runtime.output.sink import OutgoingRecord

PARTITIONS = 3


class AcceptingBatch:
    def append(self, **record: Any) -> object:
        return object()

    def close(self) -> None:
        pass


class FailingProducer:
    """Accepts batches, then fails every delivery."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, int]] = []

    def create_batch(self) -> AcceptingBatch:
        return AcceptingBatch()

    async def partitions_for(self, topic: str) -> set[int]:
        return {0, 1}

    async def send_batch(self, batch: AcceptingBatch, topic: str, *, partition: int) -> Any:
        self.batches.append((topic, partition))
        delivery = asyncio.get_running_loop().create_future()
        delivery.set_exception(KafkaTimeoutError("Batch expired"))
        return delivery


async def test_a_failed_delivery_raises_delivery_error() -> None:
    producer = FailingProducer()
    sink = ProducerSink(producer)
    sink.send(OutgoingRecord("out", b"k", b"v", 1, [], partition=1))
    with pytest.raises(DeliveryError, match="KafkaTimeoutError: Batch expired"):
        await sink.flush()
    assert producer.batches == [("out", 1)]
    # The record is gone: no later flush may let a commit pass it.
    with pytest.raises(DeliveryError, match="Batch expired"):
        await sink.flush()


class HeldProducer(FailingProducer):
    """Accepts batches; their deliveries wait until `acknowledge`."""

    def __init__(self) -> None:
        super().__init__()
        self.deliveries: list[asyncio.Future[Any]] = []

    async def send_batch(self, batch: AcceptingBatch, topic: str, *, partition: int) -> Any:
        self.batches.append((topic, partition))
        self.deliveries.append(asyncio.get_running_loop().create_future())
        return self.deliveries[-1]

    def acknowledge(self) -> None:
        for delivery in self.deliveries:
            if not delivery.done():
                delivery.set_result(None)


async def test_an_overlapping_flush_waits_for_what_an_earlier_flush_waits_for() -> None:
    """A revocation's commit flushes while the periodic commit's flush waits: it must not
    return before the outputs sent before it are acknowledged, the earlier flush's too."""
    producer = HeldProducer()
    sink = ProducerSink(producer)
    sink.send(OutgoingRecord("out", b"k", b"v", 1, [], partition=1))
    periodic = asyncio.create_task(sink.flush())
    await asyncio.sleep(0)  # it took the delivery in flight and waits for it
    assert producer.batches == [("out", 1)]
    revocation = asyncio.create_task(sink.flush())
    for _ in range(20):  # turns of the loop enough for a flush with nothing to wait for
        await asyncio.sleep(0)
    assert not revocation.done(), "a flush returned before an output sent before it was acked"
    producer.acknowledge()
    await asyncio.wait_for(asyncio.gather(periodic, revocation), 30)


async def test_a_cancelled_flush_leaves_an_overlapping_flush_its_wait() -> None:
    producer = HeldProducer()
    sink = ProducerSink(producer)
    sink.send(OutgoingRecord("out", b"k", b"v", 1, [], partition=0))
    first = asyncio.create_task(sink.flush())
    await asyncio.sleep(0)
    second = asyncio.create_task(sink.flush())
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert not second.done()
    producer.acknowledge()
    await asyncio.wait_for(second, 30)


@pytest.mark.broker
async def test_records_reach_the_partition_send_would_choose_in_order(
    broker: Broker, unique: str
) -> None:
    out, dlq = f"sink-out-{unique}", f"sink-dlq-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(out, PARTITIONS), TopicSpec(dlq, 1)])
    keyed = [
        OutgoingRecord(out, b"auction-%d" % i, b"v%d" % i, 1_000 + i, [("h", b"%d" % i)])
        for i in range(600)
    ]
    pinned = OutgoingRecord(out, None, b"no key", 5_000, [], partition=2)
    dead_letter = OutgoingRecord(dlq, b"bad", b"raw", 6_000, [("error", b"SerdeError")])
    keyless = OutgoingRecord(dlq, None, b"raw", 7_000, [])  # no key, no partition: any will do
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, max_batch_size=4096)
    await producer.start()
    try:
        sink = ProducerSink(producer)
        for record in keyed[:300]:
            sink.send(record)
        await sink.drain()  # batches of a drain are sent before a later drain's
        for record in [*keyed[300:], pinned, dead_letter, keyless]:
            sink.send(record)
        await sink.flush()
        assert sink.sent == {out: 601, dlq: 2}
    finally:
        await producer.stop()

    partitions = list(range(PARTITIONS))
    expected: dict[int, list[tuple[Any, ...]]] = {p: [] for p in partitions}
    for r in keyed:
        partition = DefaultPartitioner()(r.key, partitions, partitions)
        expected[partition].append((r.key, r.value, r.timestamp, r.headers))
    expected[2].append((None, b"no key", 5_000, []))
    seen = await read_all(broker.bootstrap, out, PARTITIONS, 601)
    assert seen == expected
    assert await read_all(broker.bootstrap, dlq, 1, 2) == {
        0: [(b"bad", b"raw", 6_000, [("error", b"SerdeError")]), (None, b"raw", 7_000, [])]
    }


async def read_all(
    bootstrap: str, topic: str, partitions: int, count: int
) -> dict[int, list[tuple[Any, ...]]]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        seen: dict[int, list[tuple[Any, ...]]] = {p: [] for p in range(partitions)}
        async with asyncio.timeout(30):
            while sum(map(len, seen.values())) < count:
                for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                    seen[tp.partition] += [
                        (r.key, r.value, r.timestamp, list(r.headers)) for r in records
                    ]
        return seen
    finally:
        await consumer.stop()
