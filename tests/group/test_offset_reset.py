"""A committed offset that retention deleted while the app was down: the consumer resumes by its
`auto_offset_reset` policy with one warning saying what was skipped, or stops under "none".

On Apache Kafka, whose DeleteRecords moves a partition's log start like retention does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiokafka
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.records_to_delete import RecordsToDelete

from streamjoin.broker import Broker
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.kafka.offset_policy import OffsetResetError

pytestmark = pytest.mark.broker


async def _topic_with_a_deleted_head(bootstrap: str, topic: str, group: str) -> None:
    """10 records; the group committed offset 3; records below 7 deleted."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        for i in range(10):
            await producer.send_and_wait(topic, str(i).encode(), partition=0)
        tp = aiokafka.TopicPartition(topic, 0)
        committer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )
        await committer.start()
        try:
            committer.assign([tp])
            await committer.commit({tp: 3})
        finally:
            await committer.stop()
        await admin.delete_records({tp: RecordsToDelete(7)})
    finally:
        await producer.stop()
        await admin.close()


@pytest.fixture
async def deleted_head(kafka_broker: Broker, unique: str) -> AsyncIterator[tuple[str, str]]:
    topic, group = f"reset-{unique}", f"g-{unique}"
    await _topic_with_a_deleted_head(kafka_broker.bootstrap, topic, group)
    yield topic, group


async def _first_offsets(consumer: CooperativeConsumer, want: int) -> list[int]:
    offsets: list[int] = []
    async with asyncio.timeout(30):
        while len(offsets) < want:
            batch = await consumer.getmany(timeout_ms=200)
            offsets += [r.offset for records in batch.values() for r in records]
    return offsets


def _consumer(bootstrap: str, topic: str, group: str, policy: str) -> CooperativeConsumer:
    return CooperativeConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset=policy,
        enable_auto_commit=False,
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
    )


def _resets(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The resets' warnings (not, say, asyncio's about a task another test left behind)."""
    return [r.getMessage() for r in caplog.records if r.name == "streamjoin.group.offset_reset"]


async def test_earliest_resumes_at_the_log_start_with_one_warning(
    kafka_broker: Broker, deleted_head: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = deleted_head
    caplog.set_level(logging.WARNING, logger="streamjoin.group.offset_reset")
    async with _consumer(kafka_broker.bootstrap, topic, group, "earliest") as consumer:
        offsets = await _first_offsets(consumer, 3)
    assert offsets == [7, 8, 9]
    warnings = _resets(caplog)
    assert len(warnings) == 1, warnings
    assert f"input {topic}[0]: offset 3 is no longer in the log" in warnings[0]
    assert "resuming from the oldest offset 7: 4 records skipped" in warnings[0]


async def test_latest_resumes_at_the_end(
    kafka_broker: Broker, deleted_head: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = deleted_head
    caplog.set_level(logging.WARNING, logger="streamjoin.group.offset_reset")
    async with _consumer(kafka_broker.bootstrap, topic, group, "latest") as consumer:
        async with asyncio.timeout(30):
            while not _resets(caplog):  # until the reset to the end is done
                assert not await consumer.getmany(timeout_ms=200)
        assert "resuming from the newest offset 10" in _resets(caplog)[0]
        producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"new", partition=0)
        finally:
            await producer.stop()
        assert await _first_offsets(consumer, 1) == [10]


async def test_none_stops_with_one_line_naming_the_partition(
    kafka_broker: Broker, deleted_head: tuple[str, str]
) -> None:
    topic, group = deleted_head
    async with _consumer(kafka_broker.bootstrap, topic, group, "none") as consumer:
        with pytest.raises(OffsetResetError) as raised:
            await _first_offsets(consumer, 1)
    message = str(raised.value)
    assert "\n" not in message
    assert f"input {topic}[0] offset 3 is not in the log and auto_offset_reset is none" in message


async def test_a_partition_without_committed_offset_starts_quietly_at_the_log_start(
    kafka_broker: Broker, deleted_head: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    topic, _ = deleted_head
    caplog.set_level(logging.WARNING, logger="streamjoin.group.offset_reset")
    fresh_group = f"{topic}-fresh"
    async with _consumer(kafka_broker.bootstrap, topic, fresh_group, "earliest") as consumer:
        assert await _first_offsets(consumer, 3) == [7, 8, 9]
    assert not _resets(caplog)


def test_an_unknown_policy_is_one_line() -> None:
    with pytest.raises(OffsetResetError, match="use earliest, latest or none"):
        CooperativeConsumer(
            "t", bootstrap_servers="localhost:1", group_id="g", auto_offset_reset="x"
        )
