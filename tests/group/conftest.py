"""An in-memory group coordinator with Apache Kafka's semantics, for member tests without a broker.

It selects the group protocol the way Kafka does (each member votes for its most preferred
protocol among those every member supports), which the embedded broker does not: Tansu keeps the
first member's first protocol forever. That makes it the place to test KIP-726's protocol
switches. Errors can be injected per request type.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import ConsumerStoppedError

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.coordinator import JoinedMember, JoinResult
from streamjoin.group.errors import (
    ErrorCode,
    FatalGroupError,
    GroupError,
    MemberFenced,
    MemberIdRequired,
    RebalanceInProgress,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cooperative_group.py

T = TypeVar("T")


@dataclass
class _Member:
    protocols: list[tuple[str, bytes]]
    joined_round: int = -1


@dataclass
class FakeCoordinator:
    """One group, shared by every member under test (each gets it as its coordinator client)."""

    partition_counts_by_topic: dict[str, int]
    group_id: str = "fake-group"
    generation: int = 0
    protocol: str = ""
    leader: str = ""
    members: dict[str, _Member] = field(default_factory=dict)
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    commits: list[tuple[str, int, dict[TopicPartition, int]]] = field(default_factory=list)
    failures: dict[str, list[GroupError]] = field(default_factory=dict)
    phase: str = "stable"
    """stable, joining (waiting for every member's JoinGroup) or syncing (for the leader's)."""
    coordinator_id: int | None = 1
    _round: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _joined: asyncio.Event = field(default_factory=asyncio.Event)
    _synced: dict[int, asyncio.Event] = field(default_factory=dict)
    _assignments: dict[str, bytes] = field(default_factory=dict)

    # -- test controls ------------------------------------------------------------------------

    def fail_next(self, api: str, error: GroupError) -> None:
        self.failures.setdefault(api, []).append(error)

    def expire(self, member_id: str) -> None:
        """The member's session expired: forget it and rebalance without it."""
        del self.members[member_id]
        self._start_round()

    def _maybe_fail(self, api: str) -> None:
        pending = self.failures.get(api)
        if pending:
            raise pending.pop(0)

    @property
    def stable(self) -> bool:
        return self.phase == "stable"

    def _start_round(self) -> None:
        if self.phase != "joining":
            self.phase = "joining"
            self._round += 1
            self._joined = asyncio.Event()
        self._check_joined()

    def _check_joined(self) -> None:
        if self._joined.is_set():
            return
        if self.members and all(m.joined_round == self._round for m in self.members.values()):
            self.generation += 1
            self.protocol = self._vote()
            if self.leader not in self.members:
                self.leader = next(iter(self.members))
            self.phase = "syncing"
            self._joined.set()

    def _vote(self) -> str:
        supported = [[name for name, _ in m.protocols] for m in self.members.values()]
        common = set(supported[0]).intersection(*supported[1:])
        votes = Counter(next(n for n in names if n in common) for names in supported)
        return max(sorted(votes), key=lambda name: votes[name])

    # -- the GroupCoordinatorClient surface the member uses --------------------------------

    async def ensure_known(self) -> int:
        return 1

    def mark_dead(self, reason: str) -> None:
        """Nothing to forget."""

    async def retrying(self, call: Callable[[], Awaitable[T]], *, within: float) -> T:
        return await call()

    async def join(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocols: Sequence[tuple[str, bytes]],
    ) -> JoinResult:
        self._maybe_fail("join")
        if not member_id:
            raise MemberIdRequired(f"m{next(self._ids)}")
        names = {name for name, _ in protocols}
        if self.members and not all(
            names & {n for n, _ in m.protocols}
            for mid, m in self.members.items()
            if mid != member_id
        ):
            raise FatalGroupError("no common protocol", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        previous = self.members.get(member_id)
        self.members[member_id] = _Member(
            list(protocols), previous.joined_round if previous else -1
        )
        if previous is None or previous.protocols != list(protocols) or self.phase == "stable":
            self._start_round()
        self.members[member_id].joined_round = self._round
        self._check_joined()
        await self._joined.wait()
        if member_id not in self.members:
            raise MemberFenced("left during the join", ErrorCode.UNKNOWN_MEMBER_ID)
        metadata = {mid: dict(m.protocols)[self.protocol] for mid, m in self.members.items()}
        return JoinResult(
            generation=self.generation,
            protocol_name=self.protocol,
            leader_id=self.leader,
            member_id=member_id,
            members=tuple(JoinedMember(mid, None, md) for mid, md in metadata.items())
            if member_id == self.leader
            else (),
        )

    async def sync(
        self,
        *,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
    ) -> bytes:
        await asyncio.sleep(
            0.005
        )  # a network round trip: followers act on their join response first
        self._maybe_fail("sync")
        if member_id not in self.members:
            raise MemberFenced("unknown member", ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != self.generation or self.phase == "joining":
            raise RebalanceInProgress("rebalancing again", ErrorCode.REBALANCE_IN_PROGRESS)
        synced = self._synced.setdefault(generation, asyncio.Event())
        if member_id == self.leader:
            self._assignments = dict(assignments)
            self.phase = "stable"
            synced.set()
        await synced.wait()
        if not self.stable or self.generation != generation:
            raise RebalanceInProgress("rebalancing again", ErrorCode.REBALANCE_IN_PROGRESS)
        return self._assignments.get(member_id, b"")

    async def heartbeat(self, *, generation: int, member_id: str) -> None:
        self._maybe_fail("heartbeat")
        if member_id not in self.members:
            raise MemberFenced("unknown member", ErrorCode.UNKNOWN_MEMBER_ID)
        if not self.stable:
            raise RebalanceInProgress("rebalancing", ErrorCode.REBALANCE_IN_PROGRESS)
        if generation != self.generation:
            raise MemberFenced("stale generation", ErrorCode.ILLEGAL_GENERATION)

    async def leave(self, *, member_id: str) -> None:
        if self.members.pop(member_id, None) is not None:
            self._start_round()

    async def commit(
        self, *, generation: int, member_id: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        self._maybe_fail("commit")
        if member_id not in self.members:
            raise MemberFenced("unknown member", ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != self.generation:
            raise MemberFenced("stale generation", ErrorCode.ILLEGAL_GENERATION)
        self.commits.append((member_id, generation, dict(offsets)))
        self.committed.update(offsets)

    async def fetch_committed(
        self, partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return {tp: self.committed.get(tp) for tp in partitions}

    async def partition_counts(self, topics: frozenset[str]) -> dict[str, int]:
        return {t: n for t, n in self.partition_counts_by_topic.items() if t in topics}


@pytest.fixture
def fake_coordinator() -> Callable[..., FakeCoordinator]:
    return FakeCoordinator


class SteadyProducer:
    """Sends one record to every partition of `topic` each `interval` seconds until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, interval: float = 0.02) -> None:
        self.topic = topic
        self.partitions = partitions
        self.interval = interval
        self.produced = [0] * partitions
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def __aenter__(self) -> SteadyProducer:
        await self._producer.start()
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while not self._stop.is_set():
            sends = [
                self._producer.send(self.topic, b"x", partition=p) for p in range(self.partitions)
            ]
            for sent in await asyncio.gather(*sends):
                await sent
            for p in range(self.partitions):
                self.produced[p] += 1
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        """Stop producing; `produced` then holds each partition's end offset."""
        self._stop.set()
        if self._task is not None:
            await self._task
        await self._producer.flush()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
        await self._producer.stop()


@dataclass
class ConsumptionLog:
    """Every delivery: which member got which record in which generation, and when."""

    deliveries: list[tuple[str, int, TopicPartition, int, float]] = field(default_factory=list)

    async def consume(self, consumer: Any, name: str, stop: asyncio.Event) -> None:
        """Read from `consumer` until `stop`, logging every record under `name` (and the
        consumer's generation; -1 for a plain aiokafka consumer, which does not expose it)."""
        with contextlib.suppress(ConsumerStoppedError):  # stopped first when a test fails
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                self.record(name, getattr(consumer, "generation", -1), batch)

    def record(
        self, member: str, generation: int, batch: Mapping[TopicPartition, list[Any]]
    ) -> None:
        now = time.monotonic()
        for tp, records in batch.items():
            for r in records:
                self.deliveries.append((member, generation, tp, r.offset, now))

    def missing(self, topic: str, produced: Sequence[int]) -> list[TopicPartition]:
        seen = {(tp.partition, offset) for _, _, tp, offset, _ in self.deliveries}
        return [
            TopicPartition(topic, p)
            for p, end in enumerate(produced)
            if any((p, o) not in seen for o in range(end))
        ]

    def consumed_twice_in_a_generation(self) -> list[tuple[TopicPartition, int, int]]:
        members: dict[tuple[TopicPartition, int, int], set[str]] = {}
        for member, generation, tp, offset, _ in self.deliveries:
            members.setdefault((tp, offset, generation), set()).add(member)
        return sorted(key for key, who in members.items() if len(who) > 1)

    def delivery_times(self, tp: TopicPartition) -> list[float]:
        return sorted(t for _, _, p, _, t in self.deliveries if p == tp)

    def longest_gap(self, tp: TopicPartition, start: float, end: float) -> float:
        """Longest time without a delivery of `tp` within [start, end]."""
        times = [start, *(t for t in self.delivery_times(tp) if start < t < end), end]
        return max(b - a for a, b in itertools.pairwise(times))


@pytest.fixture
def steady_producer() -> type[SteadyProducer]:
    return SteadyProducer


@pytest.fixture
def consumption_log() -> ConsumptionLog:
    return ConsumptionLog()


async def _wait_until(condition: Callable[[], bool], within: float, poll: float = 0.05) -> None:
    """Poll `condition` until true; fail after `within` seconds. Polling, because the states
    waited on span several members, brokers and processes that share no event to wait on."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(poll)


@pytest.fixture
def wait_until() -> Callable[[Callable[[], bool], float], Awaitable[None]]:
    return _wait_until
