"""Every assignor in a real group of plain aiokafka consumers: three consume, one leaves, one
joins, and every record is consumed. Each rebalance costs about 4 s on the embedded broker, so
each scenario has three: the start, the leave and the join."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from streamjoin.assignment.consumer.aiokafka_adapter import AiokafkaAssignor
from streamjoin.assignment.consumer.registry import ASSIGNORS
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = pytest.mark.broker

PARTITIONS = 6
PER_PARTITION = 5


class Member:
    """One consumer with its own adapter, consuming until stopped and committing as it goes."""

    def __init__(self, broker: str, group: str, topics: list[str], assignor: str) -> None:
        self.consumer = AIOKafkaConsumer(
            *topics,
            bootstrap_servers=broker,
            group_id=group,
            partition_assignment_strategy=[AiokafkaAssignor(assignor)],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            rebalance_timeout_ms=6000,
        )
        self.seen: list[bytes] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self._task = asyncio.create_task(self._consume())

    async def _consume(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=200)
            for records in batches.values():
                self.seen.extend(r.value for r in records if r.value is not None)
            if batches:
                with contextlib.suppress(KafkaError):  # a rebalance may interrupt a commit
                    await self.consumer.commit()

    def assignment(self) -> set[TopicPartition]:
        return set(self.consumer.assignment())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.consumer.stop()


async def produce(bootstrap: str, topics: list[str], phase: str) -> set[bytes]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    values = set()
    try:
        for topic in topics:
            for partition in range(PARTITIONS):
                for i in range(PER_PARTITION):
                    value = f"{phase}:{topic}:{partition}:{i}".encode()
                    await producer.send(topic, value, partition=partition)
                    values.add(value)
        await producer.flush()
    finally:
        await producer.stop()
    return values


async def wait_for(condition: Callable[[], bool], what: str, within: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def covers(members: list[Member], partitions: set[TopicPartition]) -> bool:
    """Each partition owned by exactly one of `members`, and every member owns some."""
    owned = [m.assignment() for m in members]
    return (
        all(owned) and sum(map(len, owned)) == len(partitions) and set().union(*owned) == partitions
    )


@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
async def test_three_consume_one_leaves_one_joins_every_record_is_consumed(
    broker: Broker, unique: str, assignor: str
) -> None:
    topics = [f"adapter-a-{unique}", f"adapter-b-{unique}"]
    await ensure_topics(broker.bootstrap, [TopicSpec(t, PARTITIONS) for t in topics])
    everything = {TopicPartition(t, p) for t in topics for p in range(PARTITIONS)}
    group = f"adapter-{assignor}-{unique}"
    first, second, third, late = (
        Member(broker.bootstrap, group, topics, assignor) for _ in range(4)
    )
    members = [first, second, third]
    try:
        await asyncio.gather(*(m.start() for m in members))
        expected = await produce(broker.bootstrap, topics, "before")
        await wait_for(lambda: covers(members, everything), "three members sharing the topics")
        await wait_for(lambda: expected <= {v for m in members for v in m.seen}, "first records")

        before_leave = {m: m.assignment() for m in (second, third)}
        await first.stop()
        await wait_for(lambda: covers([second, third], everything), "the rebalance after a leave")
        if assignor in ("sticky", "stream-join-sticky"):  # history travels in user data
            for member, had in before_leave.items():
                assert had <= member.assignment()
        expected |= await produce(broker.bootstrap, topics, "after-leave")

        await late.start()
        members = [second, third, late]
        await wait_for(lambda: covers(members, everything), "the rebalance after a join")
        expected |= await produce(broker.bootstrap, topics, "after-join")
        everyone = [first, *members]
        await wait_for(lambda: expected <= {v for m in everyone for v in m.seen}, "every record")

        if assignor == "stream-join-sticky":  # co-partitioned: same numbers in both topics
            for member in members:
                numbers = [
                    {tp.partition for tp in member.assignment() if tp.topic == t} for t in topics
                ]
                assert numbers[0] == numbers[1]
    finally:
        for member in (first, second, third, late):
            with contextlib.suppress(Exception):
                await member.stop()
