"""Standby targets: distinct clients, never the active's, balanced copies, most state first."""

from __future__ import annotations

from collections import Counter

from streamjoin.assignment.tasks import ClientState, TaskId, TaskSpec
from streamjoin.assignment.tasks.active_placement import ActiveTarget
from streamjoin.assignment.tasks.lags import compute_lags
from streamjoin.assignment.tasks.standby_placement import place_standbys

END = 150_000
TASKS = [TaskId(0, p) for p in range(6)]


def standbys(
    clients: list[ClientState],
    owners: dict[TaskId, str],
    replicas: int,
    holders: dict[TaskId, str] | None = None,
) -> dict[TaskId, list[str]]:
    lags = compute_lags([TaskSpec(t, END) for t in owners], clients, 100)
    return place_standbys(
        sorted(owners), clients, lags, ActiveTarget(owners, holders or {}), replicas
    )


def test_copies_are_distinct_avoid_the_active_and_balance_the_clients() -> None:
    clients = [ClientState(name) for name in ("a", "b", "c")]
    owners = {task: "abc"[task.partition % 3] for task in TASKS}
    placed = standbys(clients, owners, 2)
    for task, holders in placed.items():
        assert len(set(holders)) == 2 and owners[task] not in holders
    assert Counter(c for holders in placed.values() for c in holders) == {"a": 4, "b": 4, "c": 4}


def test_clients_with_the_most_state_get_the_standby() -> None:
    task = TaskId(0, 0)
    clients = [
        ClientState("a"),
        ClientState("b", offset_sums={task: END - 5_000}),
        ClientState("c", offset_sums={task: END - 40}),
        ClientState("d"),
    ]
    assert standbys(clients, {task: "d"}, 1) == {task: ["c"]}


def test_the_client_running_a_task_keeps_its_standby_first() -> None:
    """The task moves to c; a runs it now and is as caught up as b, so a keeps the copy."""
    task = TaskId(0, 0)
    clients = [
        ClientState("a", 1, frozenset([task]), frozenset(), {task: END}),
        ClientState("b", 1, frozenset(), frozenset([task]), {task: END}),
        ClientState("c"),
    ]
    assert standbys(clients, {task: "c"}, 1, holders={task: "a"}) == {task: ["a"]}


def test_fewer_copies_when_clients_run_out_and_none_for_one_client() -> None:
    clients = [ClientState("a"), ClientState("b")]
    placed = standbys(clients, {TASKS[0]: "a"}, 3)
    assert placed == {TASKS[0]: ["b"]}
    assert standbys(clients[:1], {TASKS[0]: "a"}, 1) == {}


def test_copies_follow_capacity() -> None:
    clients = [ClientState("a", 1), ClientState("b", 2), ClientState("c", 3)]
    owners = {
        task: "c" if task.partition < 3 else "b" if task.partition < 5 else "a" for task in TASKS
    }
    placed = standbys(clients, owners, 1)
    held = Counter(c for holders in placed.values() for c in holders) + Counter(owners.values())
    assert held == {"a": 2, "b": 4, "c": 6}


def test_among_equally_caught_up_clients_the_previous_standby_keeps_it() -> None:
    task = TaskId(0, 0)
    clients = [
        ClientState("a", offset_sums={task: END}),  # an old copy, say a finished learner
        ClientState("b", 1, frozenset(), frozenset([task]), {task: END}),
        ClientState("c"),
    ]
    assert standbys(clients, {task: "c"}, 1) == {task: ["b"]}
