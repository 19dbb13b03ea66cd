"""The classic consumer group protocol, spoken to the group's coordinator over aiokafka's client.

One job: send FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and
OffsetFetch, and turn every error code into one of the exceptions in `streamjoin.group.errors`.
What to do about an error is the member's business. aiokafka negotiates the request versions
per connection (JoinGroup v5 carries the static `group_instance_id`).

JoinGroup and SyncGroup block on the broker for a whole rebalance, so they use their own
connection (aiokafka's COORDINATION group); heartbeats, commits and offset fetches use a second
one (DEFAULT) so that a cooperative member can commit while its JoinGroup is pending.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.errors import KafkaError
from aiokafka.protocol.api import Request
from aiokafka.protocol.commit import OffsetCommitRequest, OffsetFetchRequest
from aiokafka.protocol.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from aiokafka.protocol.metadata import MetadataRequest

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.backoff import Backoff
from streamjoin.group.errors import (
    CoordinatorUnavailable,
    ErrorCode,
    FatalGroupError,
    GroupError,
    MemberFenced,
    MemberIdRequired,
    RebalanceInProgress,
    error_name,
)
from streamjoin.kafka.txn_protocol import OffsetFetchStableRequest

__all__ = ("CONSUMER_PROTOCOL_TYPE", "GroupCoordinatorClient", "JoinResult", "JoinedMember")

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

CONSUMER_PROTOCOL_TYPE = "consumer"

_STABLE_WITHIN_S = 120.0
"""How long an offset fetch waits for an open transaction: longer than any transaction
timeout streamjoin sets, after which the broker has aborted it."""

_COORDINATOR_CODES = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
_FENCED_CODES = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION})
_FATAL_HINTS: dict[int, str] = {
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: "none of this member's assignors is the protocol the "
    "group uses; list that assignor too (e.g. 'range') or use another group id",
    ErrorCode.FENCED_INSTANCE_ID: "another running member uses the same group_instance_id; "
    "give every instance its own id",
    ErrorCode.INVALID_SESSION_TIMEOUT: "the broker rejects this session timeout; choose one "
    "within its group.min/max.session.timeout.ms",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "this client may not use the group; check the ACLs",
    ErrorCode.INVALID_GROUP_ID: "the group id is not valid; use a non-empty id",
    ErrorCode.GROUP_MAX_SIZE_REACHED: "the group is full; raise group.max.size or use "
    "fewer members",
}


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """One member as the leader sees it in the JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    generation: int
    protocol_name: str
    leader_id: str
    member_id: str
    members: tuple[JoinedMember, ...]
    """Every member with its metadata for the selected protocol; empty unless this member leads."""

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.member_id


class GroupCoordinatorClient:
    """Requests to one group's coordinator; raises GroupError subclasses, never returns codes."""

    def __init__(
        self,
        client: AIOKafkaClient,
        group_id: str,
        backoff: Backoff | None = None,
        *,
        require_stable: bool = False,
    ) -> None:
        """`require_stable`: offset fetches wait while a transaction holding offsets for the
        partitions is open (exactly-once: it may yet commit them)."""
        self.client = client
        self.group_id = group_id
        self.require_stable = require_stable
        self.coordinator_id: int | None = None
        self._backoff = backoff or Backoff()
        self._lookup_lock = asyncio.Lock()

    async def ensure_known(self) -> int:
        """Find the coordinator, retrying with bounded backoff until one answers."""
        async with self._lookup_lock:
            while self.coordinator_id is None:
                try:
                    node_id: int = await self.client.coordinator_lookup(
                        CoordinationType.GROUP, self.group_id
                    )
                    if await self.client.ready(node_id, group=ConnectionGroup.COORDINATION):
                        self.coordinator_id = node_id
                        self._backoff.reset()
                        logger.info("group %s: coordinator is node %s", self.group_id, node_id)
                        break
                    reason = f"node {node_id} is not reachable"
                except (KafkaError, OSError) as exc:
                    reason = f"{type(exc).__name__}: {exc}"
                delay = self._backoff.next_delay()
                logger.warning(
                    "group %s: no coordinator yet (%s); retrying in %.2f s",
                    self.group_id,
                    reason,
                    delay,
                )
                await asyncio.sleep(delay)
            return self.coordinator_id

    async def retrying(self, call: Callable[[], Awaitable[_T]], *, within: float) -> _T:
        """Run `call`, finding the coordinator again whenever it is unavailable, for at most
        `within` seconds; then the last CoordinatorUnavailable is raised."""
        deadline = time.monotonic() + within
        backoff = Backoff(self._backoff.initial, self._backoff.maximum)
        while True:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await self.ensure_known()
                return await call()
            except (CoordinatorUnavailable, TimeoutError) as exc:
                if time.monotonic() + backoff.initial >= deadline:
                    if isinstance(exc, CoordinatorUnavailable):
                        raise
                    raise CoordinatorUnavailable(
                        f"group {self.group_id}: no coordinator found"
                    ) from exc
                await asyncio.sleep(min(backoff.next_delay(), deadline - time.monotonic()))

    def mark_dead(self, reason: str) -> None:
        """Forget the coordinator so the next request looks it up again."""
        if self.coordinator_id is not None:
            logger.warning(
                "group %s: coordinator node %s marked dead: %s",
                self.group_id,
                self.coordinator_id,
                reason,
            )
            self.coordinator_id = None

    async def _send(self, request: Request[Any], *, blocking: bool) -> Any:
        node_id = self.coordinator_id
        if node_id is None:
            raise CoordinatorUnavailable(f"group {self.group_id}: coordinator unknown")
        group = ConnectionGroup.COORDINATION if blocking else ConnectionGroup.DEFAULT
        name = type(request).__name__
        try:
            return await self.client.send(node_id, request, group=group)
        except (KafkaError, OSError) as exc:
            self.mark_dead(f"{name} failed: {type(exc).__name__}: {exc}")
            raise CoordinatorUnavailable(f"group {self.group_id}: {name} failed ({exc!r})") from exc

    def _check(self, code: int, what: str) -> None:
        if code == ErrorCode.NONE:
            return
        message = f"group {self.group_id}: {what} failed with {error_name(code)}"
        if code in _COORDINATOR_CODES:
            self.mark_dead(error_name(code))
            raise CoordinatorUnavailable(message, code)
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise RebalanceInProgress(message, code)
        if code in _FENCED_CODES:
            raise MemberFenced(message, code)
        hint = _FATAL_HINTS.get(code)
        if hint is not None:
            raise FatalGroupError(f"{message}: {hint}", code)
        raise GroupError(message, code)

    async def join(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocols: Sequence[tuple[str, bytes]],
    ) -> JoinResult:
        """JoinGroup; raises MemberIdRequired with the id to join again with (KIP-394)."""
        request = JoinGroupRequest(
            self.group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            group_instance_id,  # nullable on the wire (v5+)
            CONSUMER_PROTOCOL_TYPE,
            list(protocols),
        )
        response = await self._send(request, blocking=True)
        if response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            raise MemberIdRequired(response.member_id)
        self._check(response.error_code, f"JoinGroup (member {member_id or '<new>'})")
        members = tuple(
            JoinedMember(m[0], m[1] if len(m) == 3 else None, m[-1] or b"")
            for m in response.members
        )
        return JoinResult(
            generation=response.generation_id,
            protocol_name=response.group_protocol or "",
            leader_id=response.leader_id,
            member_id=response.member_id,
            members=members,
        )

    async def sync(
        self,
        *,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
    ) -> bytes:
        """SyncGroup; the leader sends every member's assignment, followers send none."""
        request = SyncGroupRequest(
            self.group_id,
            generation,
            member_id,
            group_instance_id,  # nullable on the wire (v3+)
            sorted(assignments.items()),
        )
        response = await self._send(request, blocking=True)
        self._check(response.error_code, f"SyncGroup (member {member_id}, generation {generation})")
        assignment: bytes = response.member_assignment or b""
        return assignment

    async def cluster_id(self) -> str | None:
        """The cluster's id, as the coordinator's Metadata answer gives it (None if it has none)."""
        response = await self._send(MetadataRequest([]), blocking=False)
        cluster_id: str | None = getattr(response, "cluster_id", None)
        return cluster_id

    async def heartbeat(self, *, generation: int, member_id: str) -> None:
        request = HeartbeatRequest(self.group_id, generation, member_id)
        response = await self._send(request, blocking=False)
        self._check(response.error_code, f"Heartbeat (member {member_id}, generation {generation})")

    async def leave(self, *, member_id: str) -> None:
        response = await self._send(LeaveGroupRequest(self.group_id, member_id), blocking=True)
        self._check(response.error_code, f"LeaveGroup (member {member_id})")

    async def commit(
        self, *, generation: int, member_id: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        """OffsetCommit fenced by member id and generation; all partitions succeed or it raises."""
        by_topic: defaultdict[str, list[tuple[int, int, str]]] = defaultdict(list)
        for tp, offset in sorted(offsets.items()):
            by_topic[tp.topic].append((tp.partition, offset, ""))
        request = OffsetCommitRequest(
            self.group_id,
            generation,
            member_id,
            OffsetCommitRequest.DEFAULT_RETENTION_TIME,
            sorted(by_topic.items()),
        )
        response = await self._send(request, blocking=False)
        failed: defaultdict[int, list[str]] = defaultdict(list)
        for topic, partitions in response.topics:
            for partition, code in partitions:
                if code != ErrorCode.NONE:
                    failed[code].append(f"{topic}-{partition}")
        if failed:
            code = min(failed, key=_severity)
            detail = "; ".join(f"{error_name(c)} for {', '.join(tps)}" for c, tps in failed.items())
            self._check(
                code, f"OffsetCommit (member {member_id}, generation {generation}: {detail})"
            )

    async def fetch_committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """Committed offset per partition; None where the group has committed nothing."""
        by_topic: defaultdict[str, list[int]] = defaultdict(list)
        for tp in sorted(set(partitions)):
            by_topic[tp.topic].append(tp.partition)
        if not by_topic:
            return {}
        if self.require_stable:
            return await self._fetch_stable(by_topic)
        response = await self._send(
            OffsetFetchRequest(self.group_id, sorted(by_topic.items())), blocking=False
        )
        self._check(getattr(response, "error_code", ErrorCode.NONE), "OffsetFetch")
        committed: dict[TopicPartition, int | None] = {}
        for topic, rows in response.topics:
            for partition, offset, _metadata, code in rows:
                self._check(code, f"OffsetFetch of {topic}-{partition}")
                committed[TopicPartition(topic, partition)] = offset if offset >= 0 else None
        return committed

    async def _fetch_stable(
        self, by_topic: Mapping[str, list[int]]
    ) -> dict[TopicPartition, int | None]:
        """OffsetFetch v7 with require_stable, asked again while a transaction is open (until
        it commits, aborts or times out on the broker)."""
        backoff = Backoff(self._backoff.initial, self._backoff.maximum)
        deadline = time.monotonic() + _STABLE_WITHIN_S
        while True:
            response = await self._send(
                OffsetFetchStableRequest(self.group_id, by_topic), blocking=False
            )
            codes = {code for _, rows, _ in response.topics for *_, code, _ in rows}
            codes.add(response.error_code)
            if ErrorCode.UNSTABLE_OFFSET_COMMIT not in codes or time.monotonic() > deadline:
                break
            await asyncio.sleep(backoff.next_delay())
        self._check(response.error_code, "OffsetFetch")
        committed: dict[TopicPartition, int | None] = {}
        for topic, rows, _ in response.topics:
            for partition, offset, _epoch, _metadata, code, _ in rows:
                self._check(code, f"OffsetFetch of {topic}-{partition}")
                committed[TopicPartition(topic, partition)] = offset if offset >= 0 else None
        return committed

    async def partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition count of each named topic that exists, from a metadata request for all topics
        (asking for the named ones would make brokers with auto-creation create them)."""
        try:
            cluster = await self.client.fetch_all_metadata()
        except (KafkaError, OSError) as exc:
            raise CoordinatorUnavailable(
                f"group {self.group_id}: metadata request failed ({exc!r})"
            ) from exc
        counts: dict[str, int] = {}
        for topic in set(topics):
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
        return counts


def _severity(code: int) -> int:
    """Which of several per-partition commit errors decides the outcome (lowest first)."""
    if code in _FENCED_CODES:
        return 0
    if code == ErrorCode.REBALANCE_IN_PROGRESS:
        return 1
    if code in _COORDINATOR_CODES:
        return 2
    return 3
