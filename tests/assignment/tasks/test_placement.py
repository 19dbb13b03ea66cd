"""Filling quotas with tasks: keep claims, release the cheapest excess, place by state."""

from __future__ import annotations

from streamjoin.assignment.tasks import ClientState, TaskId, TaskSpec
from streamjoin.assignment.tasks.lags import TaskLags, compute_lags
from streamjoin.assignment.tasks.placement import Need, place

END = 10_000
CLIENTS = ["a", "b", "c"]


def lags(task: TaskId, behind: dict[str, int]) -> TaskLags:
    """Lags of `task` when the named clients are `behind` offsets behind its end."""
    states = [
        ClientState(c, offset_sums={task: END - behind[c]} if c in behind else {}) for c in CLIENTS
    ]
    return compute_lags([TaskSpec(task, END)], states, 100)[task]


def need(
    partition: int, claims: tuple[str, ...] = (), behind: dict[str, int] | None = None
) -> Need:
    task = TaskId(0, partition)
    return Need(task, 1, claims, frozenset(), lags(task, behind or {}))


def test_claims_within_quota_are_kept() -> None:
    needs = [need(0, ("a",), {"a": 0}), need(1, ("b",), {"b": 0}), need(2)]
    placed = place(needs, {"a": 1, "b": 1, "c": 1}, CLIENTS)
    assert placed == {TaskId(0, 0): ["a"], TaskId(0, 1): ["b"], TaskId(0, 2): ["c"]}


def test_an_over_quota_client_releases_the_task_someone_else_is_caught_up_on() -> None:
    needs = [
        need(0, ("a",), {"a": 0}),
        need(1, ("a",), {"a": 0, "b": 50}),  # b is caught up on 0_1
        need(2, ("a",), {"a": 0}),
    ]
    placed = place(needs, {"a": 2, "b": 1, "c": 0}, CLIENTS)
    assert placed[TaskId(0, 1)] == ["b"]
    assert placed[TaskId(0, 0)] == placed[TaskId(0, 2)] == ["a"]


def test_without_a_free_taker_the_task_with_most_state_elsewhere_moves() -> None:
    needs = [
        need(0, ("a",), {"a": 0, "b": 9_000}),
        need(1, ("a",), {"a": 0, "b": 2_000}),  # b has most of 0_1 already
    ]
    placed = place(needs, {"a": 1, "b": 1, "c": 0}, CLIENTS)
    assert placed == {TaskId(0, 0): ["a"], TaskId(0, 1): ["b"]}


def test_unclaimed_tasks_go_to_caught_up_clients_first_then_to_room() -> None:
    needs = [need(0, (), {"c": 10}), need(1), need(2)]
    placed = place(needs, {"a": 1, "b": 1, "c": 1}, CLIENTS)
    assert placed[TaskId(0, 0)] == ["c"]
    assert sorted(placed[TaskId(0, 1)] + placed[TaskId(0, 2)]) == ["a", "b"]


def test_copies_avoid_forbidden_clients_rerouting_when_needed() -> None:
    """Standbys: a task never gets a copy on its active's client. 0_1's active is on c, the
    only client with room left, so b's copy of 0_0 moves to c and 0_1 takes b."""
    t0, t1 = TaskId(0, 0), TaskId(0, 1)
    needs = [
        Need(t0, 1, ("b",), frozenset({"a"}), lags(t0, {"b": 0})),
        Need(t1, 1, (), frozenset({"c"}), lags(t1, {})),
    ]
    placed = place(needs, {"a": 0, "b": 1, "c": 1}, CLIENTS)
    assert placed[t0] == ["c"]
    assert placed[t1] == ["b"]


def test_several_copies_go_to_distinct_clients() -> None:
    task = TaskId(0, 0)
    needs = [Need(task, 2, (), frozenset({"a"}), lags(task, {}))]
    placed = place(needs, {"a": 0, "b": 1, "c": 1}, CLIENTS)
    assert sorted(placed[task]) == ["b", "c"]


def test_quotas_too_small_overfill_rather_than_drop_a_copy() -> None:
    task = TaskId(0, 0)
    needs = [Need(task, 1, (), frozenset({"a"}), lags(task, {}))]
    placed = place(needs, {"a": 1, "b": 0, "c": 0}, CLIENTS)
    assert placed[task] in (["b"], ["c"])
