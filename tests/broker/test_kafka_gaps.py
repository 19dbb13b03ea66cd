"""What the embedded broker (Tansu 0.6.0) lacks compared with Apache Kafka.

Each test pins one gap listed in docs/broker-facts.md ("Tansu's gaps"). If one starts failing
after a broker upgrade, the gap is gone: update that page and the code that works around it.
They run on Tansu whichever broker the session has (Apache Kafka has none of these gaps).
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import NewPartitions
from aiokafka.errors import IncompatibleBrokerVersion, KafkaError

from streamjoin.broker import Broker, EmbeddedBroker
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = pytest.mark.broker


@pytest.fixture
def broker(tansu_broker: Broker) -> Broker:
    """These gaps are Tansu's: the tests use Tansu even when the session runs Apache Kafka."""
    return tansu_broker


async def _produce_one_batch(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
    await producer.start()
    try:
        batch = producer.create_batch()
        for value in values:
            batch.append(key=b"k", value=value, timestamp=None)
        batch.close()
        await (await producer.send_batch(batch, topic, partition=0))
    finally:
        await producer.stop()


async def _read_all(bootstrap: str, tp: TopicPartition) -> tuple[list[bytes], int, int]:
    """Values of the partition, plus the fetched high watermark and ListOffsets' end offset."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        while True:
            records = (await consumer.getmany(tp, timeout_ms=1000)).get(tp, [])
            values += [r.value for r in records]
            highwater = consumer.highwater(tp)
            if highwater is not None and await consumer.position(tp) >= highwater:
                break
        end_offset = (await consumer.end_offsets([tp]))[tp]
        return values, highwater, end_offset
    finally:
        await consumer.stop()


async def test_list_offsets_is_wrong_after_a_multi_record_batch(
    broker: Broker, unique: str
) -> None:
    topic = f"gap-offsets-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    await _produce_one_batch(broker.bootstrap, topic, [b"%d" % i for i in range(50)])
    values, highwater, end_offset = await _read_all(broker.bootstrap, TopicPartition(topic, 0))
    assert len(values) == 50
    assert highwater == 50, "the fetched high watermark is right"
    assert end_offset == 1, "ListOffsets(latest) answers the last batch's base offset + 1"


async def test_compacted_topics_are_never_compacted(broker: Broker, unique: str) -> None:
    topic = f"gap-compact-{unique}"
    await ensure_topics(
        broker.bootstrap,
        [
            TopicSpec(
                topic,
                1,
                {
                    "cleanup.policy": "compact",
                    "segment.ms": "100",
                    "min.cleanable.dirty.ratio": "0.01",
                },
            )
        ],
    )
    await _produce_one_batch(broker.bootstrap, topic, [b"old", b"older", b"new"])
    values, _, _ = await _read_all(broker.bootstrap, TopicPartition(topic, 0))
    assert values == [b"old", b"older", b"new"], "every version of the key is still there"


async def test_idempotent_producer_cannot_start(broker: Broker) -> None:
    # aiokafka sends InitProducerId v0; this broker accepts only v3 and later.
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True)
    try:
        with pytest.raises(KafkaError):
            await producer.start()
    finally:
        await producer.stop()


async def test_partitions_cannot_be_added(broker: Broker, unique: str) -> None:
    topic = f"gap-grow-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    async with open_admin(broker.bootstrap) as admin:
        with pytest.raises(IncompatibleBrokerVersion, match="CreatePartitions"):
            await admin.create_partitions({topic: NewPartitions(total_count=2)})


def test_data_lives_in_memory_only() -> None:
    async def produce_and_count(bootstrap: str, produce: bool) -> list[str]:
        if produce:
            await ensure_topics(bootstrap, [TopicSpec("survivor", 1)])
        async with open_admin(bootstrap) as admin:
            return [t for t in await admin.list_topics() if t == "survivor"]

    first = EmbeddedBroker()
    with first:
        assert asyncio.run(produce_and_count(first.bootstrap, produce=True)) == ["survivor"]
    with EmbeddedBroker(first.port) as restarted:
        assert asyncio.run(produce_and_count(restarted.bootstrap, produce=False)) == []
