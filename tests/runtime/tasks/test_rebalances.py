"""A worker's history of rebalances: why each happened as far as this worker knows, which of its
tasks changed role, and how long the output of a task that became active here paused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.assignment.tasks.model import TaskId as AssignedId
from streamjoin.runtime.tasks.followup import FollowupTrigger
from streamjoin.runtime.tasks.rebalances import RebalanceReason, RebalanceRecorder
from streamjoin.runtime.tasks.roles import Roles
from streamjoin.runtime.topology.app_topology import TaskId

A, B = TaskId("join", 0), TaskId("join", 1)
TP_B = TopicPartition("in", 1)


@dataclass
class Running:
    processed: dict[TopicPartition, int] = field(default_factory=dict)

    def positions(self) -> dict[TopicPartition, int]:
        return self.processed


@dataclass
class Active:
    running: Running | None = None


@dataclass
class FakeManager:
    active: dict[TaskId, Active] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.calls.append("assigned")

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self.calls.append("revoked")

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.calls.append("lost")


class FakeTopology:
    def to_assignment(self, task: TaskId) -> AssignedId:
        return AssignedId(0, task.partition)


@dataclass
class FakeAssignor:
    last_members: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeRoles:
    told: Roles = field(default_factory=Roles)
    topology: FakeTopology = field(default_factory=FakeTopology)
    assignor: FakeAssignor = field(default_factory=FakeAssignor)
    next_probe_ms: int | None = 0

    def roles(self) -> Roles:
        return self.told


@dataclass
class Member:
    member_id: str = "m1"
    generation: int = 1
    is_leader: bool = False
    rebalance_started_at: float = 0.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def recorder() -> tuple[RebalanceRecorder, FakeManager, FakeRoles, Member, Clock]:
    manager, roles, member, clock = FakeManager(), FakeRoles(), Member(), Clock()
    recording = RebalanceRecorder(manager, roles, clock=clock)  # type: ignore[arg-type]
    recording.member = member
    return recording, manager, roles, member, clock


async def rebalance(
    recording: RebalanceRecorder,
    member: Member,
    clock: Clock,
    *,
    took: float = 0.5,
    revoked: frozenset[TopicPartition] = frozenset(),
) -> dict[str, Any]:
    member.generation += 1
    member.rebalance_started_at = clock.now
    clock.now += took
    if revoked:
        await recording.on_revoked(revoked)
    await recording.on_assigned(frozenset())
    return recording.history[-1].as_json()


async def test_a_first_join_then_a_learner_then_its_follow_up_and_the_pause() -> None:
    recording, manager, roles, member, clock = recorder()
    roles.told = Roles(active=frozenset({A}))
    first = await rebalance(recording, member, clock)
    assert first["reasons"] == ["member-joined"]
    assert first["moved"] == {"0_0": [None, "active"]}
    assert first["took_s"] == 0.5 and recording.joined_at_ms == first["at_ms"]
    assert manager.calls == ["assigned"]

    roles.told = Roles(active=frozenset({A}), learner=frozenset({B}), warmup=frozenset({B}))
    assert (await rebalance(recording, member, clock))["reasons"] == ["group"]

    # The follow-up trigger asks; the next assignment makes B active, its partitions held back.
    trigger = FollowupTrigger(
        roles,  # type: ignore[arg-type]
        type("State", (), {"task": lambda self, name: None})(),
        acceptable_recovery_lag=0,
        stable=lambda: True,
        generation=lambda: member.generation,
        request_rejoin=lambda reason: None,
        max_backoff_s=60,
        asked=recording.asked,
    )
    trigger.check(0, 1e15)  # the probing time has come
    roles.told = Roles(active=frozenset({A, B}))
    moved = await rebalance(recording, member, clock)
    assert moved["reasons"] == ["probing"]
    assert moved["moved"] == {"0_1": ["learner", "active"]}
    handed_at = clock.now

    # The partitions come in the next generation; the pause ends with B's first record.
    manager.active[B] = Active(Running())
    await rebalance(recording, member, clock)
    clock.now += 2.0
    recording.check_pauses()
    assert recording.handoffs == 0, "nothing processed yet: the output is still paused"
    manager.active[B].running.processed[TP_B] = 7  # type: ignore[union-attr]
    clock.now += 0.25
    recording.check_pauses()
    pause = clock.now - handed_at
    assert recording.history[-2].pauses_s == {"0_1": pause}
    assert (recording.handoffs, recording.handoff_pause_s) == (1, pause)


async def test_revoking_makes_the_next_rebalance_a_follow_up() -> None:
    recording, _, roles, member, clock = recorder()
    roles.told = Roles(active=frozenset({A, B}))
    await rebalance(recording, member, clock)
    roles.told = Roles(active=frozenset({A}))
    taken = await rebalance(recording, member, clock, revoked=frozenset({TP_B}))
    assert taken["reasons"] == ["group"] and taken["moved"] == {"0_1": ["active", None]}
    assert (await rebalance(recording, member, clock))["reasons"] == ["follow-up"]
    assert (await rebalance(recording, member, clock))["reasons"] == ["group"]


async def test_a_task_whose_owner_is_gone_pauses_from_the_start_of_the_rebalance() -> None:
    recording, manager, roles, member, clock = recorder()
    await rebalance(recording, member, clock)
    roles.told = Roles(active=frozenset({A}))
    manager.active[A] = Active(Running({TopicPartition("in", 0): 3}))  # here at once
    started = clock.now
    await rebalance(recording, member, clock, took=1.5)
    assert recording.history[-1].pauses_s == {"0_0": clock.now - started}


async def test_the_leader_sees_members_come_and_go_and_a_new_leader_a_leader_gone() -> None:
    recording, _, roles, member, clock = recorder()
    member.is_leader = True
    roles.assignor.last_members = {"m1": "p1", "m2": "p2"}
    await rebalance(recording, member, clock)
    roles.assignor.last_members = {"m1": "p1", "m2": "p2", "m3": "p3"}
    assert (await rebalance(recording, member, clock))["reasons"] == ["member-joined"]
    roles.assignor.last_members = {"m1": "p1", "m3": "p3"}
    assert (await rebalance(recording, member, clock))["reasons"] == ["member-left"]

    follower, _, _, other, other_clock = recorder()
    await rebalance(follower, other, other_clock)
    other.is_leader = True  # the coordinator picks a new leader only when its leader left
    assert (await rebalance(follower, other, other_clock))["reasons"] == ["member-left"]


async def test_a_lost_membership_is_a_rejoin_and_the_history_is_bounded() -> None:
    recording, _, _, member, clock = recorder()
    await rebalance(recording, member, clock)
    await recording.on_lost(frozenset())
    member.member_id = "m1-again"
    again = await rebalance(recording, member, clock)
    assert again["reasons"] == ["rejoined"]
    for _ in range(30):
        await rebalance(recording, member, clock)
    assert len(recording.history) == 20
    assert recording.reasons[RebalanceReason.GROUP] == 30
