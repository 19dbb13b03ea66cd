"""The shared changelog consumer: reads each tracked partition from its sink's start offset to
the high watermark seen in fetch responses; a start past the end restarts from the beginning."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.reader import ChangelogReader

pytestmark = pytest.mark.broker


class Sink:
    def __init__(self, start: int | None, *, broken: bool = False) -> None:
        self.start = start
        self.broken = broken
        self.keys: list[bytes] = []
        self.last: tuple[int, int] | None = None
        self.resets: list[str] = []
        self.failures: list[BaseException] = []
        self.caught_up = asyncio.Event()

    def start_offset(self) -> int | None:
        return self.start

    def apply(self, records: list[Any]) -> None:
        if self.broken:
            raise ValueError("cannot apply")
        self.keys.extend(record.key for record in records)

    def progress(self, position: int, highwater: int, stable: int) -> None:
        self.start, self.last = position, (position, highwater)
        if position >= highwater:
            self.caught_up.set()

    def reset(self, reason: str) -> None:
        self.resets.append(reason)
        self.start = None
        self.keys.clear()

    def fail(self, error: BaseException) -> None:
        self.failures.append(error)
        self.caught_up.set()


async def fill(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for partition, count in counts.items():
            writer = ChangelogWriter(producer, topic, partition)
            for i in range(count):
                writer.append(b"%d-%d" % (partition, i), b"v")
            await writer.wait_confirmed(writer.seal())
    finally:
        await producer.stop()


@pytest.fixture
async def reader(broker: Broker) -> AsyncIterator[ChangelogReader]:
    started = ChangelogReader(broker.bootstrap)
    await started.start()
    yield started
    await started.close()


async def test_reads_each_partition_from_its_start_to_the_end(
    broker: Broker, reader: ChangelogReader, unique: str
) -> None:
    topic = f"log-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 3)])
    await fill(broker.bootstrap, topic, {0: 300, 1: 50})
    sinks = {0: Sink(None), 1: Sink(20), 2: Sink(0)}
    for partition, sink in sinks.items():
        reader.track(topic, partition, sink)
    await asyncio.wait_for(asyncio.gather(*(s.caught_up.wait() for s in sinks.values())), 20)
    assert sinks[0].keys == [b"0-%d" % i for i in range(300)]
    assert sinks[1].keys == [b"1-%d" % i for i in range(20, 50)]
    assert sinks[2].keys == []
    assert [sink.last for sink in sinks.values()] == [(300, 300), (50, 50), (0, 0)]


async def test_a_start_past_the_end_restarts_from_the_beginning(
    broker: Broker, reader: ChangelogReader, unique: str
) -> None:
    topic = f"log-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    await fill(broker.bootstrap, topic, {0: 10})
    sink = Sink(1_000)
    reader.track(topic, 0, sink)
    await asyncio.wait_for(sink.caught_up.wait(), 20)
    assert len(sink.resets) == 1
    assert "at offset 1000, outside the changelog's range" in sink.resets[0]
    assert sink.keys == [b"0-%d" % i for i in range(10)]


async def test_a_failing_sink_stops_only_its_partition_and_tailing_goes_on(
    broker: Broker, reader: ChangelogReader, unique: str
) -> None:
    topic = f"log-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    await fill(broker.bootstrap, topic, {0: 5, 1: 5})
    broken, healthy = Sink(0, broken=True), Sink(0)
    reader.track(topic, 0, broken)
    reader.track(topic, 1, healthy)
    await asyncio.wait_for(asyncio.gather(broken.caught_up.wait(), healthy.caught_up.wait()), 20)
    assert [type(error) for error in broken.failures] == [ValueError]
    await fill(broker.bootstrap, topic, {1: 3})
    async with asyncio.timeout(20):
        while len(healthy.keys) < 8:  # noqa: ASYNC110 - fed by the reader's background task
            await asyncio.sleep(0.02)
    assert healthy.keys == [b"1-%d" % i for i in range(5)] + [b"1-%d" % i for i in range(3)]
    reader.untrack(topic, 1)
    await fill(broker.bootstrap, topic, {1: 2})
    await asyncio.sleep(0.5)
    assert len(healthy.keys) == 8
