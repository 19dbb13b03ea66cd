"""Real Kafka traffic through the embedded broker with plain aiokafka clients."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = pytest.mark.broker


async def test_round_trip_keeps_keys_headers_and_timestamps(
    each_broker: Broker, unique: str
) -> None:
    """The smoke test: on the session's broker, and on Tansu when that is another one."""
    broker = each_broker
    topic = f"roundtrip-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    sent = [
        (
            f"key-{i}".encode(),
            f"value-{i}".encode(),
            1_700_000_000_000 + i * 1000,
            [("n", str(i).encode())],
        )
        for i in range(20)
    ]
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        for key, value, ts, headers in sent:
            await producer.send(
                topic, value, key=key, timestamp_ms=ts, headers=headers, partition=int(key[4:]) % 2
            )
        await producer.flush()
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        received = []
        while len(received) < len(sent):
            batches = await consumer.getmany(timeout_ms=2000)
            assert batches, f"no records after {len(received)}"
            for tp, records in batches.items():
                for r in records:
                    assert r.partition == int(r.key[4:]) % 2 == tp.partition
                    received.append(
                        (r.key, r.value, r.timestamp, [(k, bytes(v)) for k, v in r.headers])
                    )
    finally:
        await consumer.stop()
    assert sorted(received) == sorted(sent)


async def test_two_consumers_in_one_group_share_the_partitions(broker: Broker, unique: str) -> None:
    topic, group = f"shared-{unique}", f"group-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 4)])
    settings = {
        "bootstrap_servers": broker.bootstrap,
        "group_id": group,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 500,
        "rebalance_timeout_ms": 6000,
        "auto_offset_reset": "earliest",
    }
    first, second = AIOKafkaConsumer(topic, **settings), AIOKafkaConsumer(topic, **settings)
    await asyncio.gather(first.start(), second.start())
    try:
        # Poll both until the group settles with both members holding partitions.
        async def poll_until_settled() -> tuple[set[int], set[int]]:
            while True:
                await asyncio.gather(first.getmany(timeout_ms=200), second.getmany(timeout_ms=200))
                a = {tp.partition for tp in first.assignment()}
                b = {tp.partition for tp in second.assignment()}
                if a and b and not a & b and a | b == {0, 1, 2, 3}:
                    return a, b

        a, b = await asyncio.wait_for(poll_until_settled(), 60)
    finally:
        await asyncio.gather(first.stop(), second.stop())
    assert len(a) == len(b) == 2
