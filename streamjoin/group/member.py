"""A consumer group member that streamjoin controls: EAGER and COOPERATIVE rebalancing.

One background task owns the member's state and runs the rebalances (join, lead, sync, hand the
changes to the listener); a second one heartbeats while the member is stable and only reports
back. Which protocol a generation follows is decided by the assignor the group selected
(`rebalance`), so a member can move between EAGER and COOPERATIVE from one generation to the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import AsyncIterator, Mapping

from streamjoin.assignment.consumer.consumer_protocol import decode_assignment
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    PartitionAssignor,
    RebalanceProtocol,
    TopicPartition,
)
from streamjoin.errors import ProtocolDecodeError
from streamjoin.group.backoff import Backoff
from streamjoin.group.config import MemberConfig
from streamjoin.group.coordinator import GroupCoordinatorClient, JoinResult
from streamjoin.group.errors import (
    FatalGroupError,
    GroupError,
    MemberFenced,
    MemberIdRequired,
    RebalanceInProgress,
)
from streamjoin.group.heartbeat import Heartbeat, HeartbeatEvents, Session
from streamjoin.group.leader import assign_members, decode_members
from streamjoin.group.listener import RebalanceListener
from streamjoin.group.offsets import GroupOffsets
from streamjoin.group.ownership import Ownership
from streamjoin.group.rebalance import (
    change_after_sync,
    lost_on_selection,
    protocol_of,
    revoke_before_join,
    select_assignor,
    subscription_metadata,
)
from streamjoin.group.rejoin_pace import rejoin_delay_ms

__all__ = ("GroupMember", "MemberState")

logger = logging.getLogger(__name__)


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"
    CLOSED = "closed"


class GroupMember:
    """Joins `config.group_id`, keeps its assignment current and reports changes to `listener`."""

    def __init__(
        self,
        coordinator: GroupCoordinatorClient,
        config: MemberConfig,
        listener: RebalanceListener | None = None,
    ) -> None:
        self.config = config
        self.group_id = config.group_id
        self._coordinator = coordinator
        self._ownership = Ownership(
            config.group_id, listener or RebalanceListener(), config.rebalance_timeout_ms / 1000
        )
        self._backoff = Backoff(config.retry_backoff_ms / 1000, config.max_retry_backoff_ms / 1000)
        self._offsets = GroupOffsets(
            coordinator,
            timeout=config.commit_timeout_ms / 1000,
            stable_session=self._session,
            fenced=self._on_fenced,
        )
        self._heartbeat = Heartbeat(
            coordinator,
            HeartbeatEvents(self._session, self._on_rebalance, self._on_fenced, self._on_fatal),
            interval=config.heartbeat_interval_ms / 1000,
            session_timeout=config.session_timeout_ms / 1000,
            backoff=Backoff(self._backoff.initial, self._backoff.maximum),
        )
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol: RebalanceProtocol | None = None
        """Protocol of the generation the member is in (None before its first assignment)."""
        self.assignor_name: str | None = None
        self.is_leader = False
        self.rebalance_started_at = 0.0
        """time.time() when the latest rebalance began (for the status of rebalances)."""
        self.error: FatalGroupError | None = None
        """Set when the member stopped because it cannot take part in the group."""
        self._rejoin_delay: float | None = (
            None if config.rejoin_delay_ms is None else config.rejoin_delay_ms / 1000
        )
        """Seconds; None until the broker has been asked (config None: by broker)."""
        self._rejoin_reason: str | None = "first join"
        self._group_rebalancing = False
        self._quiet_until = 0.0
        self._fenced: tuple[Session, MemberFenced] | None = None
        self._closing = False
        self.leaving = False  # set by an application about to leave: see _waits_to_leave
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._generation_held = asyncio.Lock()
        """Held by `holding_generation`; the member takes it to start joining."""

    # -- public API ---------------------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """Partitions this member owns now."""
        return self._ownership.partitions

    async def start(self) -> None:
        """Start joining in the background; assignments arrive through the listener."""
        self._tasks = [
            asyncio.create_task(self._run(), name=f"group-member-{self.group_id}"),
            asyncio.create_task(self._heartbeat.run(), name=f"group-heartbeat-{self.group_id}"),
        ]

    def request_rejoin(self, reason: str) -> None:
        """Start a rebalance soon (e.g. a learner caught up); the member keeps what it owns
        until the new assignment says otherwise (COOPERATIVE) or revokes it first (EAGER)."""
        if self._rejoin_reason is None:
            logger.info("group %s: member %s rejoins: %s", self.group_id, self.member_id, reason)
            self._rejoin_reason = reason
        self._wakeup.set()

    @contextlib.asynccontextmanager
    async def holding_generation(self) -> AsyncIterator[Session | None]:
        """For offsets committed in a transaction (KIP-447): this member's id and generation,
        which stay the group's while held, for the member sends no JoinGroup meanwhile (the
        coordinator moves to the next generation once every member has joined, and then
        refuses a transaction's offsets of the one before); None while the member rejoins
        (commit once it has its next generation)."""
        async with self._generation_held:
            yield self._session()

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit `offsets` (next offset to read, per partition) with this member's id and
        generation; raises CommitFailedError when the broker refuses, never drops them silently."""
        refused = None
        if self._ownership.commits_blocked:
            refused = "lost its partitions"
        elif self.generation == NO_GENERATION:
            refused = "has no generation"
        await self._offsets.commit(
            offsets, Session(self.member_id, self.generation), refused=refused
        )

    async def committed(
        self, partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offsets (None where nothing is committed)."""
        return await self._offsets.committed(partitions)

    async def close(self) -> None:
        """Revoke what is owned, leave the group (dynamic members only) and stop."""
        if self.state is MemberState.CLOSED:
            return
        self._closing = True
        self._wakeup.set()
        if self._tasks:
            run, heartbeat = self._tasks
            heartbeat.cancel()
            if self.state in (MemberState.JOINING, MemberState.SYNCING):
                run.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        blocked = self._ownership.commits_blocked or self.generation == NO_GENERATION
        await self._ownership.release_all(lost=blocked)
        if self.member_id and self.config.group_instance_id is None:
            try:
                await self._coordinator.leave(member_id=self.member_id)
                logger.info("group %s: member %s left the group", self.group_id, self.member_id)
            except GroupError as exc:
                logger.warning(
                    "group %s: LeaveGroup failed (%s); its session will expire", self.group_id, exc
                )
        self.state = MemberState.CLOSED

    # -- reports from the heartbeat and from commits -----------------------------------------

    def _session(self) -> Session | None:
        if self.state is MemberState.STABLE and not self._closing:
            return Session(self.member_id, self.generation)
        return None

    def _on_rebalance(self, reason: str) -> None:
        self._group_rebalancing = True
        self.request_rejoin(reason)

    def _on_fenced(self, session: Session, exc: MemberFenced) -> None:
        if session == self._session() and self._fenced is None:
            logger.warning("group %s: member %s fenced: %s", self.group_id, self.member_id, exc)
            self._fenced = (session, exc)
            self._wakeup.set()

    def _on_fatal(self, exc: FatalGroupError) -> None:
        self.error = exc
        self._wakeup.set()

    def _waits_to_leave(self) -> bool:
        """About to leave, owning nothing: no rebalance waits for it, its LeaveGroup ends it."""
        return self.leaving and not self._ownership.partitions

    # -- the member's own task ----------------------------------------------------------------

    async def _run(self) -> None:
        while not self._closing and self.error is None:
            fenced, self._fenced = self._fenced, None
            if fenced is not None and fenced[0] == self._session():
                await self._reset(fenced[1])
            quiet = self._quiet_until - time.monotonic()
            idle = self._rejoin_reason is None or self._waits_to_leave()
            if idle or (quiet > 0 and not self._group_rebalancing):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), quiet if quiet > 0 else None)
                self._wakeup.clear()
                continue
            try:
                await self._coordinator.ensure_known()
                if self._rejoin_delay is None:
                    self._rejoin_delay = await self._broker_rejoin_delay()
                await self._rebalance()
                self._backoff.reset()
            except RebalanceInProgress as exc:
                logger.info("group %s: %s; joining again", self.group_id, exc)
                self._group_rebalancing = True
            except MemberFenced as exc:
                await self._reset(exc)
            except FatalGroupError as exc:
                self.error = exc
            except GroupError as exc:
                delay = self._backoff.next_delay()
                logger.warning(
                    "group %s: rebalance failed (%s); retrying in %.2f s", self.group_id, exc, delay
                )
                await asyncio.sleep(delay)
            except Exception as exc:
                logger.exception("group %s: unexpected error in the member", self.group_id)
                self.error = FatalGroupError(f"group {self.group_id}: unexpected error: {exc!r}")
        if self.error is not None:
            logger.error("group %s: member %s stops: %s", self.group_id, self.member_id, self.error)
            await self._ownership.release_all(lost=True)

    async def _broker_rejoin_delay(self) -> float:
        cluster_id = await self._coordinator.cluster_id()
        delay = rejoin_delay_ms(cluster_id) / 1000
        if delay:
            logger.info(
                "group %s: follow-up rejoins wait %.1f s after an assignment (cluster %r answers "
                "SyncGroup by polling)",
                self.group_id,
                delay,
                cluster_id,
            )
        return delay

    async def _reset(self, exc: MemberFenced) -> None:
        """Forget the generation (and the member id if the broker forgot it): all is lost."""
        await self._ownership.release_all(lost=True)
        self.generation = NO_GENERATION
        self.protocol = None
        if exc.forget_member_id:
            self.member_id = ""
        self.state = MemberState.UNJOINED
        self._quiet_until = 0.0
        self._rejoin_reason = self._rejoin_reason or f"fenced ({exc})"

    async def _rebalance(self) -> None:
        """One round: revoke if EAGER, join, lead if chosen, sync, apply the assignment."""
        reason, self._rejoin_reason = self._rejoin_reason, None
        self._group_rebalancing = False
        self.rebalance_started_at = time.time()
        try:
            revoked = revoke_before_join(self._ownership.partitions, self.protocol)
            if revoked:
                await self._ownership.revoke(revoked)
            async with self._generation_held:  # a commit in flight keeps its generation
                self.state = MemberState.JOINING
            joined = await self._join(reason or "rejoin")
            assignor = select_assignor(self.config.assignors, joined.protocol_name)
            protocol = protocol_of(assignor)
            lost = lost_on_selection(self._ownership.partitions, self.protocol, protocol)
            if lost:
                logger.warning(
                    "group %s: the group selected EAGER assignor %r while this member held %d "
                    "partitions cooperatively: they are lost (no commits until rejoined)",
                    self.group_id,
                    assignor.name,
                    len(lost),
                )
                self._ownership.commits_blocked = True
                await self._ownership.lose(lost)
            assignments: dict[str, bytes] = {}
            if joined.is_leader:
                decoded = decode_members(self.group_id, joined.members)
                counts = await self._coordinator.partition_counts(decoded.topics)
                await assignor.before_assign(counts, decoded.subscriptions)
                assignments = assign_members(self.group_id, assignor, protocol, decoded, counts)
            self.state = MemberState.SYNCING
            data = await self._coordinator.sync(
                generation=joined.generation,
                member_id=self.member_id,
                group_instance_id=self.config.group_instance_id,
                assignments=assignments,
            )
        except BaseException:
            self._rejoin_reason = self._rejoin_reason or reason
            self.state = MemberState.JOINING
            raise
        await self._apply(joined, assignor, protocol, self._decode(data))

    async def _join(self, reason: str) -> JoinResult:
        protocols = [
            (
                a.name,
                subscription_metadata(
                    a,
                    self.config.topics,
                    self._ownership.partitions,
                    self.generation,
                    self.config.rack,
                ),
            )
            for a in self.config.assignors
        ]
        while True:
            try:
                joined = await self._coordinator.join(
                    member_id=self.member_id,
                    group_instance_id=self.config.group_instance_id,
                    session_timeout_ms=self.config.session_timeout_ms,
                    rebalance_timeout_ms=self.config.rebalance_timeout_ms,
                    protocols=protocols,
                )
            except MemberIdRequired as exc:
                logger.info("group %s: joining as member %s", self.group_id, exc.member_id)
                self.member_id = exc.member_id
                continue
            self.member_id = joined.member_id
            self._ownership.joined()
            logger.info(
                "group %s: member %s joined generation %d (%s; protocol %r, %s)",
                self.group_id,
                self.member_id,
                joined.generation,
                reason,
                joined.protocol_name,
                f"leader of {len(joined.members)}" if joined.is_leader else "follower",
            )
            return joined

    def _decode(self, data: bytes) -> Assignment:
        try:
            return decode_assignment(data)
        except ProtocolDecodeError as exc:
            logger.error(
                "group %s: member %s cannot decode its assignment (%s); it owns nothing this "
                "generation and rejoins",
                self.group_id,
                self.member_id,
                exc,
            )
            self._rejoin_reason = "undecodable assignment"
            return Assignment(())

    async def _apply(
        self,
        joined: JoinResult,
        assignor: PartitionAssignor,
        protocol: RebalanceProtocol,
        got: Assignment,
    ) -> None:
        change = change_after_sync(self._ownership.partitions, got.partitions, protocol)
        self.generation = joined.generation
        self.protocol = protocol
        self.assignor_name = assignor.name
        self.is_leader = joined.is_leader
        self._ownership.commits_blocked = False
        self._quiet_until = time.monotonic() + (self._rejoin_delay or 0.0)
        self.state = MemberState.STABLE
        self._heartbeat.wake()
        logger.info(
            "group %s: member %s in generation %d (%s, %s): %d partitions (+%d, -%d)",
            self.group_id,
            self.member_id,
            self.generation,
            assignor.name,
            protocol.name,
            len(change.owned),
            len(change.added),
            len(change.revoked),
        )
        if change.revoked:
            await self._ownership.revoke(change.revoked)
        assignor.on_assignment(got, joined.generation)
        await self._ownership.add(change.added)
        if change.follow_up and not self._waits_to_leave():
            self.request_rejoin(f"follow-up after revoking {len(change.revoked)} partitions")
