"""A Kafka consumer for asyncio applications with cooperative rebalancing (KIP-429).

When a member joins or leaves the group, only the partitions that move stop: every other
partition keeps being fetched and delivered during the rebalance. Built on streamjoin's own
group member (which speaks the consumer group protocol) and an aiokafka consumer with manual
assignment for fetching.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from aiokafka import ConsumerRecord
from aiokafka.errors import NoOffsetForPartitionError, OffsetOutOfRangeError

from streamjoin.assignment.model import PartitionAssignor, TopicPartition
from streamjoin.group.config import MemberConfig, resolve_assignors
from streamjoin.group.coordinator import GroupCoordinatorClient
from streamjoin.group.errors import CommitFailedError
from streamjoin.group.feed import PartitionFeed, Records
from streamjoin.group.listener import RebalanceListener
from streamjoin.group.member import GroupMember
from streamjoin.group.offset_reset import PositionReset
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.offset_policy import check_policy
from streamjoin.kafka.security import KafkaSecurity

__all__ = ("CooperativeConsumer",)

logger = logging.getLogger(__name__)

_IDLE_POLL_MS = 200


class _FeedListener(RebalanceListener):
    """Moves the fetcher with the member's assignment, then tells the application."""

    def __init__(self, owner: CooperativeConsumer, app: RebalanceListener) -> None:
        self._owner = owner
        self._app = app

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions:
            self._owner.feed.add(await self._owner.member.committed(partitions))
        await self._app.on_assigned(partitions)

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        positions = self._owner.feed.remove(partitions, reassign=not self._owner.stopping)
        await self._app.on_revoked(partitions)
        if self._owner.auto_commit:
            await self._owner.commit_quietly(positions)

    def on_joined(self) -> None:
        self._app.on_joined()

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._owner.feed.remove(partitions, reassign=not self._owner.stopping)
        await self._app.on_lost(partitions)


class CooperativeConsumer:
    """Subscribe to `topics` as a member of `group_id`; read with `getmany` or `async for`.

    `assignors` are tried in preference order (Kafka protocol names or PartitionAssignor
    objects); the group's selected one decides whether a rebalance is COOPERATIVE or EAGER.
    With `enable_auto_commit`, the position of every delivered record is committed every
    `auto_commit_interval_ms`, when partitions are revoked and on `stop()` (at-least-once:
    records are committed once returned, as with aiokafka). `auto_offset_reset` (earliest,
    latest, none) says where a partition without a committed offset, or whose committed offset
    is no longer in the log, resumes (the latter with a warning). `isolation_level=
    "read_committed"` skips records of aborted transactions and makes offset fetches wait for
    open transactions (exactly-once, KIP-447). Other keyword arguments go to
    `aiokafka.AIOKafkaConsumer` (deserializers, fetch sizes, ...); `security` holds the TLS and
    SASL settings of both its connections (default: PLAINTEXT). `fetch_buffer_bytes` bounds the
    fetched records not yet read, all partitions together: the per-partition fetch size follows
    the assignment (kafka/fetch_sizes.py).
    """

    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str,
        group_id: str,
        security: KafkaSecurity | None = None,
        assignors: Sequence[str | PartitionAssignor] = ("cooperative-sticky",),
        listener: RebalanceListener | None = None,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        rebalance_timeout_ms: int = 60_000,
        rejoin_delay_ms: int | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        auto_offset_reset: str = "latest",
        isolation_level: str = "read_uncommitted",
        client_id: str = "streamjoin",
        fetch_buffer_bytes: int | None = None,
        **consumer_options: Any,
    ) -> None:
        reset_policy = check_policy(auto_offset_reset)
        self.config = MemberConfig(
            group_id=group_id,
            topics=tuple(topics),
            assignors=resolve_assignors(assignors),
            group_instance_id=group_instance_id,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            rejoin_delay_ms=rejoin_delay_ms,
            client_id=client_id,
        )
        self.auto_commit = enable_auto_commit
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        kafka = KafkaConnection(bootstrap_servers, security or KafkaSecurity())
        self._client = kafka.client(
            client_id=client_id, request_timeout_ms=max(40_000, rebalance_timeout_ms + 5_000)
        )
        self._consumer = kafka.consumer(
            client_id=client_id,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="none",
            isolation_level=isolation_level,
            **consumer_options,
        )
        self._reset = PositionReset(self._consumer, reset_policy)
        read_committed = isolation_level == "read_committed"
        self.feed = PartitionFeed(
            self._consumer, read_committed=read_committed, fetch_buffer_bytes=fetch_buffer_bytes
        )
        self.member = GroupMember(
            GroupCoordinatorClient(self._client, group_id, require_stable=read_committed),
            self.config,
            _FeedListener(self, listener or RebalanceListener()),
        )
        self._auto_commit_task: asyncio.Task[None] | None = None
        self._buffer: list[ConsumerRecord[Any, Any]] = []
        self.stopping = False

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and start joining the group; records flow once partitions are assigned."""
        await self._client.bootstrap()
        await self._consumer.start()
        await self.member.start()
        if self.auto_commit:
            self._auto_commit_task = asyncio.create_task(self._auto_commit_loop())

    async def stop(self) -> None:
        """Commit (if auto-commit), revoke everything, leave the group, close the connections."""
        if self.stopping:
            return
        self.stopping = True
        if self._auto_commit_task is not None:
            self._auto_commit_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._auto_commit_task
        try:
            await self.member.close()
        finally:  # even when leaving cannot finish (no broker) and the caller gives up on it
            await self._consumer.stop()
            await self._client.close()

    async def __aenter__(self) -> CooperativeConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- group state --------------------------------------------------------------------------

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this consumer owns now."""
        return self.member.assignment

    @property
    def generation(self) -> int:
        return self.member.generation

    def request_rejoin(self, reason: str = "requested by the application") -> None:
        """Start a rebalance (cooperative: keeps consuming what it owns meanwhile)."""
        self.member.request_rejoin(reason)

    async def rewind(self, partitions: Iterable[TopicPartition]) -> None:
        """Deliver these owned partitions again from their committed offsets (after an aborted
        transaction: what it consumed is read again)."""
        owned = frozenset(partitions) & self.feed.partitions
        if owned:
            self.feed.add(await self.member.committed(owned))

    # -- reading ------------------------------------------------------------------------------

    async def getmany(self, *, timeout_ms: int = 0, max_records: int | None = None) -> Records:
        """Records of owned partitions, by partition, waiting up to `timeout_ms` for some."""
        if self.member.error is not None:
            raise self.member.error
        if not self.feed.assigned:
            # Before its first assignment aiokafka's getmany waits for one without bound (a
            # whole join round: 35 s in a group with Java members); return within the timeout.
            await asyncio.sleep(timeout_ms / 1000)
            return {}
        try:
            return await self.feed.fetch(timeout_ms=timeout_ms, max_records=max_records)
        except (NoOffsetForPartitionError, OffsetOutOfRangeError) as exc:
            self.feed.restart(await self._reset.apply(exc))
            return {}

    def __aiter__(self) -> AsyncIterator[ConsumerRecord[Any, Any]]:
        return self

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        while not self._buffer:
            batch = await self.getmany(timeout_ms=_IDLE_POLL_MS)
            self._buffer = [r for records in batch.values() for r in records]
            self._buffer.reverse()
        return self._buffer.pop()

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching these owned partitions until `resume` (kept across rebalances)."""
        self.feed.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self.feed.resume(partitions)

    def lag(self, tp: TopicPartition) -> int | None:
        """Records of `tp` not yet delivered, as of the last fetch (None: not known yet)."""
        return self.feed.lag(tp)

    # -- committing ---------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit `offsets` (next offset to read), or the position of every delivered record
        of the owned partitions. Raises CommitFailedError when the group refuses."""
        if offsets is None:
            offsets = self.feed.uncommitted()
        if offsets:
            await self.member.commit(offsets)
            self.feed.mark_committed(offsets)

    async def commit_quietly(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """`commit`, logging a refusal instead of raising (auto-commit and revocation)."""
        try:
            await self.commit(offsets)
        except CommitFailedError as exc:
            level = logging.INFO if exc.retriable else logging.WARNING
            logger.log(level, "group %s: auto-commit not done: %s", self.config.group_id, exc)

    async def _auto_commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self._auto_commit_interval)
            await self.commit_quietly()
