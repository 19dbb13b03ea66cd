"""When a worker asks for the follow-up rebalance: once its learners have caught up, once per
generation, backing off when the group does not promote them, and at the probing time."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin.runtime.tasks.followup import FollowupTrigger
from streamjoin.runtime.tasks.roles import Roles
from streamjoin.runtime.topology.app_topology import TaskId

LEARNER = TaskId("j", 1)


@dataclass
class FakeRoles:
    learners: frozenset[TaskId] = frozenset({LEARNER})
    next_probe_ms: int | None = None

    def roles(self) -> Roles:
        return Roles(learner=self.learners, warmup=self.learners)


@dataclass
class FakeTask:
    lag_value: int | None

    def lag(self) -> int | None:
        return self.lag_value


@dataclass
class FakeState:
    lags: dict[str, int | None] = field(default_factory=lambda: {str(LEARNER): 500})

    def task(self, task_id: str) -> FakeTask | None:
        return FakeTask(self.lags[task_id]) if task_id in self.lags else None


def make(
    roles: FakeRoles, state: FakeState, generation: list[int]
) -> tuple[FollowupTrigger, list[str]]:
    asked: list[str] = []
    trigger = FollowupTrigger(
        roles,  # type: ignore[arg-type]
        state,  # type: ignore[arg-type]
        acceptable_recovery_lag=100,
        stable=lambda: True,
        generation=lambda: generation[0],
        request_rejoin=asked.append,
        max_backoff_s=60,
    )
    return trigger, asked


def test_asks_once_when_every_learner_is_within_the_acceptable_lag() -> None:
    roles, state, generation = FakeRoles(), FakeState(), [5]
    trigger, asked = make(roles, state, generation)
    trigger.check(0, 0)
    assert asked == []  # lag 500 > 100
    state.lags[str(LEARNER)] = 40
    trigger.check(1, 0)
    trigger.check(2, 0)
    assert asked == ["warm-ups caught up: j_1"]


def test_a_standby_that_a_move_warms_up_in_is_watched_like_a_learner() -> None:
    """With standbys, a move to this worker warms up in its standby slot: no learner at all."""

    @dataclass
    class StandbyWarmup(FakeRoles):
        def roles(self) -> Roles:
            return Roles(standby=self.learners, warmup=self.learners)

    roles, state, generation = StandbyWarmup(), FakeState({str(LEARNER): 0}), [5]
    trigger, asked = make(roles, state, generation)
    trigger.check(0, 0)
    assert asked == ["warm-ups caught up: j_1"]


def test_backs_off_when_the_same_learners_come_back() -> None:
    roles, state, generation = FakeRoles(), FakeState({str(LEARNER): 0}), [5]
    trigger, asked = make(roles, state, generation)
    trigger.check(0, 0)
    generation[0] = 6  # the group answered, with the learner still a learner
    trigger.check(1, 0)
    assert len(asked) == 1
    trigger.check(2.5, 0)  # first backoff: 2 s
    assert len(asked) == 1
    trigger.check(3.1, 0)
    assert len(asked) == 2
    generation[0] = 7
    trigger.check(4, 0)
    trigger.check(7.9, 0)
    assert len(asked) == 2  # second backoff: 4 s
    trigger.check(8.1, 0)
    assert len(asked) == 3


def test_unknown_lag_or_no_learners_ask_nothing() -> None:
    for roles, state in (
        (FakeRoles(learners=frozenset()), FakeState()),
        (FakeRoles(), FakeState({str(LEARNER): None})),
    ):
        trigger, asked = make(roles, state, [1])
        trigger.check(0, 0)
        assert asked == []


def test_the_probing_time_asks_once_even_without_catch_up() -> None:
    roles = FakeRoles(next_probe_ms=1_000)
    trigger, asked = make(roles, FakeState(), [1])
    trigger.check(0, 999, catch_up=False)
    trigger.check(0, 1_000, catch_up=False)
    trigger.check(0, 2_000, catch_up=False)
    assert asked == ["probing rebalance: the assignment asked for one"]


def test_tasks_assigned_here_but_withheld_ask_for_the_follow_up_once() -> None:
    """Their old owner rejoins once it has revoked them; this worker would hear of that only
    at its next heartbeat. Asking at once saves that wait; asking again for the same tasks
    (withheld once more) would rebalance in a loop."""
    trigger, asked = make(FakeRoles(frozenset()), FakeState({}), [5])
    trigger.withheld(frozenset())
    assert asked == []
    trigger.withheld(frozenset({LEARNER}))
    trigger.withheld(frozenset({LEARNER}))
    assert asked == ["follow-up: 1 tasks assigned here wait for their partitions"]
    trigger.withheld(frozenset())
    trigger.withheld(frozenset({LEARNER}))
    assert len(asked) == 2
