"""Input offsets in a transaction, fenced by the group member (KIP-447), on Apache Kafka: a
member's offsets commit with its transaction; a stale generation or an unknown member id is
refused; a new owner's offset fetch waits while a transaction holding offsets is open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaProducer

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.transactions import (
    MemberIdentity,
    TransactionFenced,
    send_offsets_to_transaction,
)

pytestmark = pytest.mark.broker


@pytest.fixture
def broker(kafka_broker: Broker) -> Broker:
    """Transactions need Apache Kafka (Tansu has none)."""
    return kafka_broker


@pytest.fixture
async def member(broker: Broker, unique: str) -> AsyncIterator[CooperativeConsumer]:
    await ensure_topics(broker.bootstrap, [TopicSpec(f"in-{unique}", 1)])
    consumer = CooperativeConsumer(
        f"in-{unique}",
        bootstrap_servers=broker.bootstrap,
        group_id=f"g-{unique}",
        enable_auto_commit=False,
        isolation_level="read_committed",
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
    )
    await consumer.start()
    async with asyncio.timeout(60):
        while not consumer.assignment():  # noqa: ASYNC110 - polled group state
            await asyncio.sleep(0.1)
    yield consumer
    await consumer.stop()


@pytest.fixture
async def producer(broker: Broker, unique: str) -> AsyncIterator[AIOKafkaProducer]:
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id=f"t-{unique}",
        enable_idempotence=True,
    )
    await producer.start()
    yield producer
    await producer.stop()


async def test_offsets_commit_with_the_transaction_and_stale_members_are_refused(
    member: CooperativeConsumer, producer: AIOKafkaProducer, unique: str
) -> None:
    tp = TopicPartition(f"in-{unique}", 0)
    group, generation = f"g-{unique}", member.member.generation
    me = MemberIdentity(group, generation, member.member.member_id)
    await producer.begin_transaction()
    await send_offsets_to_transaction(producer, {tp: 5}, me, within_s=30)
    await producer.commit_transaction()
    assert await member.member.committed(frozenset({tp})) == {tp: 5}

    for stale in (
        MemberIdentity(group, generation - 1, me.member_id),
        MemberIdentity(group, generation, "someone-else"),
    ):
        await producer.begin_transaction()
        with pytest.raises(TransactionFenced) as refused:
            await send_offsets_to_transaction(producer, {tp: 7}, stale, within_s=30)
        assert not refused.value.producer
        await producer.abort_transaction()
    assert await member.member.committed(frozenset({tp})) == {tp: 5}


async def test_an_offset_fetch_waits_for_an_open_transaction(
    member: CooperativeConsumer, producer: AIOKafkaProducer, unique: str
) -> None:
    tp = TopicPartition(f"in-{unique}", 0)
    me = MemberIdentity(f"g-{unique}", member.member.generation, member.member.member_id)
    await producer.begin_transaction()
    await send_offsets_to_transaction(producer, {tp: 9}, me, within_s=30)
    fetching = asyncio.create_task(member.member.committed(frozenset({tp})))
    await asyncio.sleep(1.5)
    assert not fetching.done(), "the fetch must wait while the transaction is open"
    await producer.abort_transaction()
    assert await asyncio.wait_for(fetching, 30) == {tp: None}


async def test_a_transactions_offsets_keep_their_generation_while_the_member_rejoins(
    member: CooperativeConsumer, producer: AIOKafkaProducer, unique: str
) -> None:
    """A commit reads the member's generation, then sends the transaction's offsets with it.
    A member rejoining meanwhile (a follow-up it asked for) moved the coordinator to the next
    generation first, which refused those offsets: under exactly-once the worker lost every
    task and started over, in about one run in three of a scale-out under traffic. While a
    commit holds the generation the member sends no JoinGroup; while the member rejoins, no
    commit gets one."""
    tp = TopicPartition(f"in-{unique}", 0)
    group = f"g-{unique}"
    async with member.member.holding_generation() as session:
        assert session is not None
        member.request_rejoin("a follow-up")
        await asyncio.sleep(1.5)  # time enough for a one-member group to complete a rebalance
        await producer.begin_transaction()
        me = MemberIdentity(group, session.generation, session.member_id)
        await send_offsets_to_transaction(producer, {tp: 3}, me, within_s=30)
        await producer.commit_transaction()
    assert await member.member.committed(frozenset({tp})) == {tp: 3}
    async with asyncio.timeout(30):
        while member.member.generation == session.generation:  # noqa: ASYNC110 - group state
            await asyncio.sleep(0.05)
    member.request_rejoin("another")
    async with asyncio.timeout(30):
        while True:
            async with member.member.holding_generation() as during:
                if during is None:  # the member is rejoining: commits wait for the next one
                    break
            await asyncio.sleep(0)
