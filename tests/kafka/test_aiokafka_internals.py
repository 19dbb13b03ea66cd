"""The aiokafka internals of streamjoin.kafka.aiokafka_internals, against Apache Kafka: the fetch
position equals what aiokafka's public `position()` answers, and a transactional producer's ids
are the live ones (a second incarnation bumps the epoch, and a transaction holding only a
group's offsets commits). These fail when an aiokafka release moves what the module reads."""

from __future__ import annotations

import asyncio
from importlib.metadata import version

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.kafka.aiokafka_internals import (
    fetch_position,
    group_joined_transaction,
    transaction_ids,
)
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.transactions import MemberIdentity, send_offsets_to_transaction

pytestmark = pytest.mark.broker

AIOKAFKA = version("aiokafka")


@pytest.fixture
def broker(kafka_broker: Broker) -> Broker:
    """Transactions need Apache Kafka (Tansu has none)."""
    return kafka_broker


async def test_the_fetch_position_is_what_aiokafka_answers(broker: Broker, unique: str) -> None:
    topic = f"pos-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        for n in range(5):
            await producer.send_and_wait(topic, f"{n}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        assert fetch_position(consumer, tp) is None, AIOKAFKA  # nothing assigned
        consumer.assign([tp])
        consumer.seek(tp, 2)
        assert fetch_position(consumer, tp) == 2, AIOKAFKA
        await asyncio.wait_for(consumer.getmany(timeout_ms=10_000), 60)
        public = await consumer.position(tp)
        assert public > 2 and fetch_position(consumer, tp) == public, AIOKAFKA
        assert fetch_position(consumer, TopicPartition(topic, 7)) is None, AIOKAFKA
    finally:
        await consumer.stop()


async def test_a_producers_transaction_ids_are_the_live_ones(broker: Broker, unique: str) -> None:
    topic = f"txn-{unique}"
    tp = TopicPartition(topic, 0)
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])

    def transactional() -> AIOKafkaProducer:
        return AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"t-{unique}")

    first, second = transactional(), transactional()
    await first.start()
    try:
        before = transaction_ids(first)
        assert before.transactional_id == f"t-{unique}", AIOKAFKA
        assert before.producer_id >= 0 and before.producer_epoch >= 0, AIOKAFKA
        await second.start()  # the same transactional id: a new epoch fences the first
        after = transaction_ids(second)
        assert after.producer_id == before.producer_id, AIOKAFKA
        assert after.producer_epoch > before.producer_epoch, AIOKAFKA
        # A transaction that holds a group's offsets and no record commits them.
        await second.begin_transaction()
        group = f"g-{unique}"
        member = MemberIdentity(group, -1, "")  # a group without members: no generation
        await send_offsets_to_transaction(second, {tp: 3}, member, within_s=60)
        await second.commit_transaction()
    finally:
        await second.stop()
        await first.stop()
    reader = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group)
    await reader.start()
    try:  # the commit's markers are written after it returns: poll
        for _ in range(300):
            committed = await reader.committed(tp)
            if committed is not None:
                break
            await asyncio.sleep(0.1)
        assert committed == 3, AIOKAFKA
    finally:
        await reader.stop()


async def test_a_producer_without_a_transactional_id_is_refused() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1")
    with pytest.raises(ValueError, match="no transactional_id"):
        transaction_ids(producer)
    with pytest.raises(ValueError, match="no transactional_id"):
        group_joined_transaction(producer, "g")
