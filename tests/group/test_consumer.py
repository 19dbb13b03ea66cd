"""CooperativeConsumer against the embedded broker: rebalancing under steady production.

Rebalances cost seconds on this broker, so each test forms its group once and waits on the
consumers' callbacks, never on fixed sleeps; timings are printed, not asserted.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from cooperative_group import GROUP_TIMEOUTS, STATIC_TIMEOUTS, Group, VictimReport

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.errors import ErrorCode
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.fixture
async def group_factory(
    broker: Broker, consumption_log: Any, wait_until: Any
) -> AsyncIterator[Callable[..., Any]]:
    async with AsyncExitStack() as stack:

        async def make(topic: str, partitions: int, group: str) -> Group:
            await ensure_topics(broker.bootstrap, [TopicSpec(topic, partitions)])
            return Group(
                stack, broker, topic=topic, group=group, log=consumption_log, wait_until=wait_until
            )

        yield make


async def test_a_group_is_not_settled_while_a_member_still_revokes(
    unique: str, group_factory: Any
) -> None:
    """The harness's `settle`, which the tests below start from: a member is stable in its new
    generation from the SyncGroup answer, and owns what it revokes until `on_revoked` returns.
    Settling on that alone let test_a_fourth_member... count the others' revocations as the
    fourth member's (it failed so under load)."""
    partitions = 6
    group = await group_factory(f"coop-{unique}", partitions, f"g-{unique}")
    await group.add("a", ["cooperative-sticky"])
    await group.settle(partitions, "a")
    group.events["a"].revoking_takes = 2.0
    await group.add("b", ["cooperative-sticky"])
    await group.settle(partitions, "ab")
    group.events["a"].revoked.clear()
    await asyncio.sleep(2.5)
    assert group.events["a"].revoked == set(), "a revocation went on after the group settled"


async def test_a_fourth_member_takes_partitions_without_stopping_the_others(
    broker: Broker,
    unique: str,
    group_factory: Any,
    steady_producer: Any,
    consumption_log: Any,
) -> None:
    partitions = 12
    group = await group_factory(f"coop-{unique}", partitions, f"g-{unique}")
    async with steady_producer(broker.bootstrap, group.topic, partitions) as producer:
        for name in "abc":
            await group.add(name, ["cooperative-sticky"])
        await group.settle(partitions, "abc")
        before = {n: group.consumers[n].assignment() for n in "abc"}
        # Revocations while a, b and c joined one by one are not the 4th member's doing.
        for name in "abc":
            group.events[name].revoked.clear()
        started = time.monotonic()
        await group.add("d", ["cooperative-sticky"])
        await group.settle(partitions, "abcd")
        settled = time.monotonic()
        # KAFKA-10455: a follower's own rejoin starts a rebalance for the whole group.
        follower = next(n for n in "abcd" if not group.consumers[n].member.is_leader)
        generation = group.consumers[follower].generation
        group.consumers[follower].request_rejoin("a follower asks for a rebalance")
        rebalanced = group.settled(partitions, "abcd")
        await group.wait_until(
            lambda: (
                rebalanced() and all(c.generation > generation for c in group.consumers.values())
            ),
            60,
        )
        await producer.stop()
        await group.drain(producer.produced)

    moved = group.consumers["d"].assignment()
    assert len(moved) == partitions // 4
    revoked = set().union(*(group.events[n].revoked for n in "abc"))
    assert revoked == moved  # only the partitions that move were revoked
    assert not any(group.events[n].lost for n in "abcd")
    for name in "abc":
        assert group.consumers[name].assignment() == before[name] - moved
    assert consumption_log.missing(group.topic, producer.produced) == []
    assert consumption_log.consumed_twice_in_a_generation() == []
    assert group.violations == []

    # Unmoved partitions kept being delivered while the group rebalanced twice (no stop).
    unmoved = sorted(frozenset().union(*before.values()) - moved)
    for tp in unmoved:
        assert any(started < t < settled for t in consumption_log.delivery_times(tp)), tp
    gaps = {
        tp.partition: consumption_log.longest_gap(tp, started, settled)
        for tp in sorted(moved | set(unmoved))
    }

    def listing(tps: Sequence[TopicPartition]) -> str:
        return ", ".join(f"{tp.partition}={gaps[tp.partition]:.2f}" for tp in tps)

    print(
        f"\nrebalance for a 4th member took {settled - started:.1f} s; longest gap per "
        f"partition (s): unmoved {listing(unmoved)}; moved {listing(sorted(moved))}"
    )


@pytest.mark.parametrize("first", ["streamjoin", "aiokafka"])
async def test_streamjoin_members_share_a_group_with_aiokafka_consumers(
    broker: Broker, unique: str, group_factory: Any, steady_producer: Any, first: str
) -> None:
    """A mixed group on `roundrobin`: whoever leads, each partition has exactly one owner."""
    partitions = 8
    group = await group_factory(f"mixed-{unique}", partitions, f"g-{unique}")
    plain: list[AIOKafkaConsumer] = []

    async def add_plain() -> None:
        consumer = AIOKafkaConsumer(
            group.topic,
            bootstrap_servers=broker.bootstrap,
            group_id=group.group,
            partition_assignment_strategy=(RoundRobinPartitionAssignor,),
            auto_offset_reset="earliest",
            **GROUP_TIMEOUTS,
        )
        await consumer.start()
        group.stack.push_async_callback(consumer.stop)
        plain.append(consumer)
        name = f"plain{len(plain)}"
        group.stops[name] = asyncio.Event()
        group.tasks[name] = asyncio.create_task(
            group.log.consume(consumer, name, group.stops[name])
        )

    async with steady_producer(broker.bootstrap, group.topic, partitions) as producer:
        if first == "aiokafka":
            await add_plain()
        await group.add("s1", ["roundrobin"])
        await asyncio.sleep(0.3)
        await group.add("s2", ["roundrobin"])
        await add_plain()
        if first == "streamjoin":
            await add_plain()

        def owners() -> list[TopicPartition]:
            sj = [tp for c in group.consumers.values() for tp in c.assignment()]
            aio = [TopicPartition(tp.topic, tp.partition) for c in plain for tp in c.assignment()]
            return sj + aio

        def assigned() -> bool:
            everything = [TopicPartition(group.topic, p) for p in range(partitions)]
            return sorted(owners()) == everything and all(
                c.assignment() for c in group.consumers.values()
            )

        await group.wait_until(assigned, 60)
        assert {c.member.assignor_name for c in group.consumers.values()} == {"roundrobin"}
        assert group.consumers["s1"].member.is_leader == (first == "streamjoin")
        await producer.stop()
        await group.drain(producer.produced)


async def test_a_rolling_bounce_to_cooperative_sticky_never_gives_a_partition_two_owners(
    broker: Broker,
    unique: str,
    group_factory: Any,
    steady_producer: Any,
    consumption_log: Any,
) -> None:
    """KIP-726's upgrade path: members on `range` are replaced one by one by members listing
    cooperative-sticky first. (The embedded broker keeps the protocol the group was created
    with, so here the group stays on `range`; the switch itself is tested in test_member.)"""
    partitions = 6
    group = await group_factory(f"bounce-{unique}", partitions, f"g-{unique}")
    async with steady_producer(broker.bootstrap, group.topic, partitions) as producer:
        names = [f"old{i}" for i in range(3)]
        for name in names:
            await group.add(name, ["range"])
        await group.settle(partitions, names)
        for i in range(3):
            await group.remove(names[i])
            names[i] = f"new{i}"
            await group.add(names[i], ["cooperative-sticky", "range"])
            await group.settle(partitions, names)
        await producer.stop()
        await group.drain(producer.produced)
    assert group.violations == []
    assert consumption_log.missing(group.topic, producer.produced) == []
    assert consumption_log.consumed_twice_in_a_generation() == []
    selected = {group.consumers[n].member.assignor_name for n in names}
    print(f"\nafter the bounce the group runs {selected} (the embedded broker never re-selects)")


async def test_a_static_member_restarted_within_its_session_keeps_its_partitions(
    broker: Broker, unique: str, group_factory: Any
) -> None:
    """group.instance.id on the embedded broker: a static member that restarts with the same
    subscription gets its member id and partitions back, and nobody else rebalances. It holds
    static members' JoinGroup and SyncGroup for 3 s each without counting them as contact, so
    their session timeout must be well above 6 s or they are evicted while joining."""
    partitions = 4
    group = await group_factory(f"static-{unique}", partitions, f"g-{unique}")
    for name in "ab":
        await group.add(name, ["range"], group_instance_id=f"{name}-{unique}", **STATIC_TIMEOUTS)
    await group.settle(partitions, "ab")
    # Settled is the members' state; their on_assigned callbacks may still be running.
    await group.wait_until(
        lambda: all(
            group.events[n].assigned
            and group.events[n].assigned[-1] == group.consumers[n].assignment()
            for n in "ab"
        ),
        10,
    )
    follower = next(n for n in "ab" if not group.consumers[n].member.is_leader)
    leader = "b" if follower == "a" else "a"
    kept = group.consumers[follower].assignment()
    generation = group.consumers[leader].generation
    leader_events = len(group.events[leader].assigned)
    group.events[leader].revoked.clear()  # revocations while a and b joined one by one

    await group.remove(follower)  # static: no LeaveGroup
    restarted = await group.add(
        f"{follower}2", ["range"], group_instance_id=f"{follower}-{unique}", **STATIC_TIMEOUTS
    )
    await group.settle(partitions, [leader, f"{follower}2"])
    assert restarted.assignment() == kept
    # Apache Kafka gives the returning static member a new member id and fences the old one
    # (KIP-345); Tansu hands back the old id. Either way it is the same member to the group.
    assert restarted.generation == generation
    assert len(group.events[leader].assigned) == leader_events  # the leader saw no rebalance
    assert not group.events[leader].revoked


async def test_a_member_that_dies_without_leaving_loses_its_partitions_after_the_session(
    broker: Broker,
    unique: str,
    group_factory: Any,
    steady_producer: Any,
    consumption_log: Any,
) -> None:
    """The member in another process (the group's leader) is killed: after the session timeout
    its partitions move to the survivors, whose own partitions never stop flowing."""
    partitions = 6
    group = await group_factory(f"crash-{unique}", partitions, f"g-{unique}")
    victim = await VictimReport.spawn(broker, group, "cooperative-sticky", GROUP_TIMEOUTS)
    process = victim.process
    try:
        async with steady_producer(broker.bootstrap, group.topic, partitions) as producer:
            await victim.wait_for("started")
            for name in "ab":
                await group.add(name, ["cooperative-sticky"])
            await asyncio.wait_for(victim.wait_until_owns(2), 60)
            victim.keep_reading()
            await group.settle(partitions - len(victim.owned), "ab")
            survivors = {n: group.consumers[n].assignment() for n in "ab"}
            lost_with_victim = set(victim.owned)
            process.kill()
            killed = time.monotonic()
            await group.settle(partitions, "ab")
            moved = time.monotonic()
            await producer.stop()
            await group.drain_with(producer.produced, victim.consumed)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
    taken = {tp.partition for n in "ab" for tp in group.consumers[n].assignment() - survivors[n]}
    assert taken == lost_with_victim
    for name, kept in survivors.items():
        assert kept <= group.consumers[name].assignment()
        for tp in kept:  # kept flowing while the dead member's session ran out
            assert any(killed < t < moved for t in consumption_log.delivery_times(tp)), tp
    assert not any(group.events[n].lost for n in "ab")
    print(f"\nthe dead member's partitions moved {moved - killed:.1f} s after the kill")


async def test_a_frozen_members_commit_with_its_stale_generation_is_rejected_and_reported(
    broker: Broker, unique: str, group_factory: Any, steady_producer: Any
) -> None:
    """The member in another process is frozen (SIGSTOP) while the group moves to a new
    generation without it, then resumes and commits what it consumed: the broker refuses, and
    the refusal reaches the application as CommitFailedError."""
    partitions = 4
    group = await group_factory(f"stale-{unique}", partitions, f"g-{unique}")
    timeouts = {**GROUP_TIMEOUTS, "session_timeout_ms": 6_000, "heartbeat_interval_ms": 500}
    async with steady_producer(broker.bootstrap, group.topic, partitions):
        leader = await group.add("leader", ["range"], **timeouts)
        victim = await VictimReport.spawn(broker, group, "range", timeouts)
        try:
            await asyncio.wait_for(victim.wait_until_owns(2), 60)
            await asyncio.wait_for(victim.wait_for("records"), 30)
            frozen_generation = leader.generation
            victim.process.send_signal(signal.SIGSTOP)
            await group.add("newcomer", ["range"], **timeouts)
            await group.wait_until(lambda: leader.generation > frozen_generation, 30)
            assert victim.process.stdin is not None
            victim.process.stdin.write(b"commit\n")
            await victim.process.stdin.drain()
            victim.process.send_signal(signal.SIGCONT)
            answer = await asyncio.wait_for(victim.wait_for("commit"), 30)
        finally:
            victim.process.kill()
            await victim.process.wait()
    assert not answer["ok"]
    assert answer["generation"] == frozen_generation
    assert answer["code"] in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID)
    print(f"\nthe frozen member's commit was refused: {answer['error']}")


async def test_getmany_returns_within_its_timeout_while_the_first_join_waits(
    broker: Broker, unique: str
) -> None:
    """aiokafka's getmany waits for a first assignment without bound; ours returns in time
    while it joins a group whose member rejoins only at its next heartbeat (10 s away)."""
    topic, group = f"slowjoin-{unique}", f"g-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    slow = AIOKafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        session_timeout_ms=45_000,
        heartbeat_interval_ms=10_000,
        max_poll_interval_ms=60_000,
        partition_assignment_strategy=(RoundRobinPartitionAssignor,),
    )
    await slow.start()
    try:
        async with asyncio.timeout(30):
            while not slow.assignment():
                await slow.getmany(timeout_ms=200)
        consumer = CooperativeConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            assignors=("roundrobin",),
            **GROUP_TIMEOUTS,
        )
        async with consumer:
            waits = []
            for _ in range(3):
                started = time.monotonic()
                await consumer.getmany(timeout_ms=200)
                waits.append(time.monotonic() - started)
            assert not consumer.assignment(), "the join must still be under way"
    finally:
        await slow.stop()
    assert max(waits) < 3, waits  # a wait for the join would take up to 10 s
