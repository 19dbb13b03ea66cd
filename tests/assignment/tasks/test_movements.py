"""Staging moves toward clients that lack the state: swaps, learners, waiting, standbys."""

from __future__ import annotations

from streamjoin.assignment.tasks import ClientState, PendingMove, Role, TaskId, TaskSpec, Warmup
from streamjoin.assignment.tasks.lags import compute_lags
from streamjoin.assignment.tasks.movements import Placement, stage_movements

END = 150_000
T = [TaskId(0, p) for p in range(4)]


def stage(
    clients: list[ClientState],
    target_active: dict[TaskId, str],
    target_standby: dict[TaskId, list[str]] | None = None,
    holders: dict[TaskId, str] | None = None,
    budget: int = 2,
) -> Placement:
    tasks = sorted(target_active)
    lags = compute_lags([TaskSpec(t, END) for t in tasks], clients, 100)
    return stage_movements(
        tasks,
        lags,
        target_active=target_active,
        target_standby=target_standby or {},
        holders=holders or {},
        budget=budget,
    )


def runs(name: str, tasks: list[TaskId]) -> ClientState:
    return ClientState(name, 1, frozenset(tasks), frozenset(), dict.fromkeys(tasks, END))


def test_targets_that_are_caught_up_take_over_at_once() -> None:
    clients = [runs("a", T[:1]), ClientState("b", offset_sums={T[0]: END - 10})]
    placement = stage(clients, {T[0]: "b"}, holders={T[0]: "a"})
    assert placement.active == {T[0]: "b"}
    assert not placement.pending


def test_the_task_stays_put_while_its_target_learns() -> None:
    clients = [runs("a", T[:2]), ClientState("b")]
    placement = stage(clients, {T[0]: "b", T[1]: "a"}, holders={T[0]: "a", T[1]: "a"})
    assert placement.active == {T[0]: "a", T[1]: "a"}
    assert placement.learner == {T[0]: "b"}
    assert placement.pending == [PendingMove(T[0], Role.ACTIVE, "b", "a", Warmup.LEARNER)]


def test_without_budget_moves_wait_most_fragile_first() -> None:
    # 0_1 can run on a only; 0_0 on a or c: 0_1 gets the single learner.
    clients = [runs("a", T[:2]), ClientState("b"), ClientState("c", offset_sums={T[0]: END})]
    placement = stage(clients, {T[0]: "b", T[1]: "b"}, holders={T[0]: "a", T[1]: "a"}, budget=1)
    assert placement.learner == {T[1]: "b"}
    assert [(m.task, m.warmup) for m in placement.pending] == [
        (T[1], Warmup.LEARNER),
        (T[0], Warmup.WAITING),
    ]


def test_a_holder_that_is_the_targets_standby_swaps_roles_for_free() -> None:
    clients = [runs("a", T[:1]), ClientState("b")]
    placement = stage(clients, {T[0]: "b"}, {T[0]: ["a"]}, holders={T[0]: "a"}, budget=0)
    assert placement.active == {T[0]: "a"}
    assert placement.standby == {T[0]: ["b"]}
    assert not placement.learner
    assert placement.pending == [PendingMove(T[0], Role.ACTIVE, "b", "a", Warmup.STANDBY)]


def test_an_orphan_swaps_with_a_caught_up_standby_instead_of_spending_budget() -> None:
    # Nobody runs 0_0 any more; c has a standby of it, the target b has nothing.
    clients = [ClientState("b"), ClientState("c", offset_sums={T[0]: END})]
    placement = stage(clients, {T[0]: "b"}, {T[0]: ["c"]})
    assert placement.active == {T[0]: "c"}
    assert placement.standby == {T[0]: ["b"]}
    assert not placement.learner


def test_a_standby_bound_for_a_cold_client_stays_with_a_caught_up_one() -> None:
    clients = [runs("a", T[:1]), ClientState("b", offset_sums={T[0]: END}), ClientState("c")]
    placement = stage(clients, {T[0]: "a"}, {T[0]: ["c"]}, holders={T[0]: "a"})
    assert placement.standby == {T[0]: ["b"]}
    assert placement.learner == {T[0]: "c"}
    assert placement.pending == [PendingMove(T[0], Role.STANDBY, "c", "b", Warmup.LEARNER)]


def test_one_learner_per_task() -> None:
    clients = [
        runs("a", T[:1]),
        ClientState("b", offset_sums={T[0]: END}),
        ClientState("c"),
        ClientState("d"),
    ]
    placement = stage(clients, {T[0]: "c"}, {T[0]: ["d"]}, holders={T[0]: "a"}, budget=2)
    assert placement.learner == {T[0]: "c"}
    assert [m.warmup for m in placement.pending] == [Warmup.LEARNER, Warmup.WAITING]


def test_a_waiting_target_given_a_standby_slot_meanwhile_warms_up_there() -> None:
    # b should run 0_0 but lags; no budget, so its move waits. c, bound for the standby, lags
    # more than b: b keeps the standby for now, so b warms up after all, as that standby.
    clients = [
        runs("a", T[:1]),
        ClientState("b", offset_sums={T[0]: END - 5_000}),
        ClientState("c"),
    ]
    placement = stage(clients, {T[0]: "b"}, {T[0]: ["c"]}, holders={T[0]: "a"}, budget=0)
    assert placement.active == {T[0]: "a"}
    assert placement.standby == {T[0]: ["b"]}
    assert placement.pending == [
        PendingMove(T[0], Role.ACTIVE, "b", "a", Warmup.STANDBY),
        PendingMove(T[0], Role.STANDBY, "c", "b", Warmup.WAITING),
    ]
