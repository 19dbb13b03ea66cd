"""The member's state machine against an in-memory coordinator with Kafka's semantics (conftest).

Covers what the embedded broker cannot show: protocol selection switching between EAGER and
COOPERATIVE per KIP-726 (Tansu never changes a group's protocol), and injected coordinator
errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.config import MemberConfig, resolve_assignors
from streamjoin.group.errors import CommitFailedError, CoordinatorUnavailable, ErrorCode
from streamjoin.group.listener import RebalanceListener
from streamjoin.group.member import GroupMember, MemberState

TOPIC = "t"
PARTITIONS = frozenset(TopicPartition(TOPIC, p) for p in range(6))


class Recorder(RebalanceListener):
    """Records callbacks and keeps a group-wide ledger: a partition has at most one owner."""

    def __init__(self, name: str, ledger: dict[TopicPartition, str]) -> None:
        self.name = name
        self.ledger = ledger
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.member: GroupMember | None = None
        self.commit_errors: list[CommitFailedError] = []
        self.violations: list[str] = []
        self.changed = asyncio.Event()

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        for tp in partitions:
            if tp in self.ledger:  # recorded, not asserted: the member logs callback errors
                self.violations.append(f"{tp} given to {self.name} while {self.ledger[tp]} owns it")
            self.ledger[tp] = self.name
        self.events.append(("assigned", partitions))
        self.changed.set()

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._release(partitions)
        self.events.append(("revoked", partitions))

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        assert self.member is not None
        try:  # KIP-726: a member that lost its partitions must not commit them
            await self.member.commit(dict.fromkeys(partitions, 1))
        except CommitFailedError as exc:
            self.commit_errors.append(exc)
        self._release(partitions)
        self.events.append(("lost", partitions))

    def _release(self, partitions: frozenset[TopicPartition]) -> None:
        for tp in partitions:
            if self.ledger.get(tp) == self.name:
                del self.ledger[tp]

    def kinds(self) -> list[str]:
        return [kind for kind, partitions in self.events if partitions]


def make_member(
    coordinator: Any,
    name: str,
    assignors: Sequence[str],
    ledger: dict[TopicPartition, str],
    **options: Any,
) -> tuple[GroupMember, Recorder]:
    config = MemberConfig(
        coordinator.group_id,
        (TOPIC,),
        resolve_assignors(assignors),
        session_timeout_ms=options.pop("session_timeout_ms", 1_000),
        heartbeat_interval_ms=options.pop("heartbeat_interval_ms", 10),
        rebalance_timeout_ms=1_000,
        rejoin_delay_ms=0,
        retry_backoff_ms=5,
        max_retry_backoff_ms=20,
        **options,
    )
    recorder = Recorder(name, ledger)
    member = GroupMember(coordinator, config, recorder)
    recorder.member = member
    return member, recorder


def settled(
    coordinator: Any, members: Sequence[GroupMember], generation_above: int = 0
) -> Callable[[], bool]:
    """Every member stable in the coordinator's current generation, owning every partition
    between them (no cooperative hand-over pending)."""
    return lambda: (
        coordinator.stable
        and coordinator.generation > generation_above
        and all(
            m.state is MemberState.STABLE and m.generation == coordinator.generation
            for m in members
        )
        and not any(m._rejoin_reason for m in members)
        and owned_by_all(members) == sorted(PARTITIONS)
    )


def owned_by_all(members: Sequence[GroupMember]) -> list[TopicPartition]:
    return sorted(tp for m in members for tp in m.assignment)


async def test_joins_with_the_member_id_the_coordinator_hands_out(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    coordinator = fake_coordinator({TOPIC: 6})
    member, recorder = make_member(coordinator, "a", ["cooperative-sticky"], {})
    await member.start()
    await wait_until(settled(coordinator, [member]), 10)
    assert member.member_id == "m1"
    assert member.assignment == PARTITIONS
    assert member.is_leader
    await member.close()
    assert recorder.kinds() == ["assigned", "revoked"]
    assert member.state is MemberState.CLOSED
    assert coordinator.members == {}


async def test_cooperative_join_revokes_only_what_moves_then_hands_it_over(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    coordinator = fake_coordinator({TOPIC: 6})
    ledger: dict[TopicPartition, str] = {}
    a, rec_a = make_member(coordinator, "a", ["cooperative-sticky"], ledger)
    await a.start()
    await wait_until(settled(coordinator, [a]), 10)
    b, rec_b = make_member(coordinator, "b", ["cooperative-sticky"], ledger)
    await b.start()
    await wait_until(settled(coordinator, [a, b], generation_above=2), 10)
    assert owned_by_all([a, b]) == sorted(PARTITIONS)
    assert len(a.assignment) == len(b.assignment) == 3
    revoked = frozenset().union(*(p for kind, p in rec_a.events if kind == "revoked"))
    assert revoked == b.assignment  # exactly the partitions that moved, nothing else
    assert rec_a.violations + rec_b.violations == []
    assert "lost" not in rec_a.kinds()
    for m in (a, b):
        await m.close()


async def test_one_rolling_bounce_upgrades_eager_to_cooperative(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    """KIP-726: members on `range` are replaced one by one by members listing
    cooperative-sticky first; the group stays EAGER until all are bounced, then turns
    COOPERATIVE, and no partition has two owners at any time."""
    coordinator = fake_coordinator({TOPIC: 6})
    ledger: dict[TopicPartition, str] = {}
    made = [make_member(coordinator, f"old{i}", ["range"], ledger) for i in range(3)]
    members = [m for m, _ in made]
    recorders = [r for _, r in made]
    for m in members:
        await m.start()
    await wait_until(settled(coordinator, members), 10)
    assert {m.protocol.name for m in members if m.protocol is not None} == {"EAGER"}
    for i in range(3):
        await members[i].close()
        members[i], recorder = make_member(
            coordinator, f"new{i}", ["cooperative-sticky", "range"], ledger
        )
        recorders.append(recorder)
        await members[i].start()
        await wait_until(settled(coordinator, members, generation_above=coordinator.generation), 10)
        expected = "cooperative-sticky" if i == 2 else "range"
        assert {m.assignor_name for m in members} == {expected}
        assert owned_by_all(members) == sorted(PARTITIONS)
    assert {m.protocol.name for m in members if m.protocol is not None} == {"COOPERATIVE"}
    assert [v for r in recorders for v in r.violations] == []
    for m in members:
        await m.close()


async def test_eager_assignor_selected_after_cooperative_means_lost_and_no_commits(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    """KIP-726: members holding partitions cooperatively find `range` selected (a range-only
    member joined): they call on_lost, not on_revoked, and commit nothing until rejoined."""
    coordinator = fake_coordinator({TOPIC: 6})
    ledger: dict[TopicPartition, str] = {}
    a, rec_a = make_member(coordinator, "a", ["cooperative-sticky", "range"], ledger)
    b, rec_b = make_member(coordinator, "b", ["cooperative-sticky", "range"], ledger)
    for m in (a, b):
        await m.start()
    await wait_until(settled(coordinator, [a, b]), 10)
    assert a.protocol is not None and a.protocol.name == "COOPERATIVE"
    held = {m: m.assignment for m in (a, b)}
    old, rec_old = make_member(coordinator, "old", ["range"], ledger)
    await old.start()
    await wait_until(settled(coordinator, [a, b, old], generation_above=coordinator.generation), 10)
    for member, recorder in ((a, rec_a), (b, rec_b)):
        assert member.assignor_name == "range"
        assert ("lost", held[member]) in recorder.events
        assert "revoked" not in recorder.kinds()
        assert [e.code for e in recorder.commit_errors] == [ErrorCode.ILLEGAL_GENERATION]
        assert not recorder.commit_errors[0].retriable
    assert not [c for c in coordinator.commits if c[0] in (a.member_id, b.member_id)]
    assert owned_by_all([a, b, old]) == sorted(PARTITIONS)
    assert rec_a.violations + rec_b.violations + rec_old.violations == []
    # Rejoined: commits are accepted again, and later rebalances are EAGER (revoke first).
    tp = next(iter(a.assignment))
    await a.commit({tp: 7})
    assert coordinator.committed[tp] == 7
    await old.close()
    await wait_until(settled(coordinator, [a, b], generation_above=coordinator.generation), 10)
    assert "revoked" in rec_a.kinds()
    for m in (a, b):
        await m.close()


async def test_session_expiry_reports_lost_and_rejoins_as_a_new_member(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    coordinator = fake_coordinator({TOPIC: 6})
    member, recorder = make_member(coordinator, "a", ["cooperative-sticky"], {})
    await member.start()
    await wait_until(settled(coordinator, [member]), 10)
    first_id = member.member_id
    coordinator.expire(first_id)
    await wait_until(settled(coordinator, [member], generation_above=coordinator.generation), 10)
    assert member.member_id != first_id
    assert member.assignment == PARTITIONS
    assert recorder.kinds() == ["assigned", "lost", "assigned"]
    await member.close()


async def test_commit_with_a_stale_generation_is_reported_and_fences_the_member(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    coordinator = fake_coordinator({TOPIC: 6})
    member, recorder = make_member(
        coordinator, "a", ["range"], {}, heartbeat_interval_ms=60_000, session_timeout_ms=120_000
    )
    await member.start()
    await wait_until(settled(coordinator, [member]), 10)
    stale = member.generation
    coordinator.generation += 1  # the group moved on without this member noticing yet
    with pytest.raises(CommitFailedError) as caught:
        await member.commit({TopicPartition(TOPIC, 0): 5})
    assert caught.value.code == ErrorCode.ILLEGAL_GENERATION
    assert not caught.value.retriable
    assert coordinator.committed == {}
    await wait_until(settled(coordinator, [member], generation_above=stale + 1), 10)
    assert recorder.kinds() == ["assigned", "lost", "assigned"]
    await member.close()


async def test_coordinator_loss_during_sync_is_retried(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    coordinator = fake_coordinator({TOPIC: 6})
    coordinator.fail_next("sync", CoordinatorUnavailable("moved", ErrorCode.NOT_COORDINATOR))
    member, _ = make_member(coordinator, "a", ["cooperative-sticky"], {})
    await member.start()
    await wait_until(settled(coordinator, [member]), 10)
    assert member.assignment == PARTITIONS
    await member.close()


async def test_inconsistent_protocol_stops_the_member_with_a_clear_error(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    coordinator = fake_coordinator({TOPIC: 6})
    a, _ = make_member(coordinator, "a", ["cooperative-sticky"], {})
    await a.start()
    await wait_until(settled(coordinator, [a]), 10)
    coordinator.fail_next(
        "join", CoordinatorUnavailable("loading", ErrorCode.COORDINATOR_NOT_AVAILABLE)
    )
    b, _ = make_member(coordinator, "b", ["range"], {})
    await b.start()
    await wait_until(lambda: b.error is not None, 5)
    assert b.error is not None and b.error.code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert a.assignment == PARTITIONS
    for m in (a, b):
        await m.close()


async def test_a_leaving_member_that_owns_nothing_joins_no_further_rebalance(
    fake_coordinator: Callable[..., Any], wait_until: Any
) -> None:
    """A worker that handed its tasks off (runtime/process/draining.py) is about to leave: if it
    joined the rebalance its peers start to take those tasks, they would wait for its join and
    its leaving would start one more."""
    coordinator = fake_coordinator({TOPIC: 1})
    ledger: dict[TopicPartition, str] = {}
    a, _ = make_member(coordinator, "a", ["cooperative-sticky"], ledger)
    await a.start()
    b, _ = make_member(coordinator, "b", ["cooperative-sticky"], ledger)
    await b.start()
    members = [a, b]
    await wait_until(
        lambda: (
            coordinator.stable
            and all(m.state is MemberState.STABLE for m in members)
            and all(m.generation == coordinator.generation for m in members)
            and not any(m._rejoin_reason for m in members)
            and len(owned_by_all(members)) == 1
        ),
        10,
    )
    idle, busy = (a, b) if not a.assignment else (b, a)
    generation = idle.generation
    idle.leaving = True
    busy.request_rejoin("warm-ups caught up")
    await wait_until(lambda: not coordinator.stable, 10)
    await asyncio.sleep(0.2)  # time enough to hear of the rebalance and join, if it did
    assert idle.state is MemberState.STABLE and idle.generation == generation
    await idle.close()
    await wait_until(
        lambda: (
            coordinator.stable
            and busy.state is MemberState.STABLE
            and busy.generation == coordinator.generation
        ),
        10,
    )
    assert list(coordinator.members) == [busy.member_id]
    assert busy.generation == generation + 1
    await busy.close()
