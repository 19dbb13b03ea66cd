"""Consumed repartition records are purged after a commit where the broker supports
DeleteRecords; where it does not (the embedded broker), that is logged once and nothing else
changes."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as KafkaPartition

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.output.purge import RepartitionPurger

pytestmark = pytest.mark.broker


async def _offsets_from_start(bootstrap: str, topic: str) -> list[int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = KafkaPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        fetched = await consumer.getmany(timeout_ms=2_000)
        return [r.offset for records in fetched.values() for r in records]
    finally:
        await consumer.stop()


async def test_purges_up_to_the_commit_or_says_once_why_not(
    broker: Broker, unique: str, caplog: pytest.LogCaptureFixture
) -> None:
    topic, other = f"app-{unique}-x-repartition", f"input-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1), TopicSpec(other, 1)])
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    for i in range(10):
        await producer.send_and_wait(topic, b"%d" % i, key=b"k")
    await producer.stop()
    purger = RepartitionPurger(broker.bootstrap, [topic])
    caplog.set_level(logging.WARNING, "streamjoin.runtime.output.purge")
    purger.after_commit({TopicPartition(topic, 0): 6, TopicPartition(other, 0): 3})
    await asyncio.sleep(0)
    await purger.close()
    remaining = await _offsets_from_start(broker.bootstrap, topic)
    refused = [r for r in caplog.records if "not purged" in r.getMessage()]
    if purger.disabled:  # a broker without DeleteRecords: said once, records left to retention
        assert len(refused) == 1
        assert remaining == list(range(10))
        purger.after_commit({TopicPartition(topic, 0): 8})
        await purger.close()
        assert len([r for r in caplog.records if "not purged" in r.getMessage()]) == 1
    else:
        assert not refused
        assert remaining == [6, 7, 8, 9]
