"""The sticky balanced target for stateful actives, and stateless tasks around them."""

from __future__ import annotations

from collections import Counter

from streamjoin.assignment.tasks import ClientState, TaskId, TaskSpec
from streamjoin.assignment.tasks.active_placement import place_stateful, place_stateless
from streamjoin.assignment.tasks.lags import compute_lags

END = 150_000


def running(name: str, tasks: list[TaskId], capacity: int = 1) -> ClientState:
    return ClientState(name, capacity, frozenset(tasks), frozenset(), dict.fromkeys(tasks, END))


def target(clients: list[ClientState], tasks: list[TaskId]) -> dict[TaskId, str]:
    specs = [TaskSpec(task, END) for task in tasks]
    return place_stateful(tasks, clients, compute_lags(specs, clients, 100)).owners


def row(subtopology: int, count: int) -> list[TaskId]:
    return [TaskId(subtopology, p) for p in range(count)]


def test_a_balanced_layout_stays_put_even_if_it_is_not_round_robin() -> None:
    tasks = row(0, 6)
    clients = [running("a", tasks[:2]), running("b", tasks[2:4]), running("c", tasks[4:])]
    owners = target(clients, tasks)
    assert owners == {t: c.process_id for c in clients for t in c.previous_active}


def test_a_new_client_takes_only_its_share_from_the_most_loaded() -> None:
    tasks = row(0, 9)
    clients = [running("a", tasks[:5]), running("b", tasks[5:]), ClientState("c")]
    owners = target(clients, tasks)
    assert sorted(Counter(owners.values()).values()) == [3, 3, 3]
    moved = [t for t in tasks if owners[t] != ("a" if t in tasks[:5] else "b")]
    assert len(moved) == 3
    assert all(owners[t] == "c" for t in moved)


def test_orphaned_tasks_go_to_clients_caught_up_on_them() -> None:
    tasks = row(0, 4)
    # d ran 0_2 and 0_3 and is gone; b holds a standby of 0_3.
    clients = [
        running("a", tasks[:1]),
        ClientState(
            "b", 1, frozenset([tasks[1]]), frozenset([tasks[3]]), {tasks[1]: END, tasks[3]: END}
        ),
        ClientState("c"),
        ClientState("e"),
    ]
    owners = target(clients, tasks)
    assert owners[tasks[0]] == "a"
    assert owners[tasks[1]] == "b"
    assert {owners[tasks[2]], owners[tasks[3]]} <= {"c", "e"}  # b is full: one task each


def test_every_subtopology_is_spread_over_the_clients() -> None:
    tasks = row(0, 4) + row(1, 4)
    # a ran all of subtopology 0, b all of subtopology 1.
    clients = [running("a", row(0, 4)), running("b", row(1, 4))]
    owners = target(clients, tasks)
    for subtopology in (0, 1):
        counts = Counter(owners[t] for t in tasks if t.subtopology == subtopology)
        assert counts == {"a": 2, "b": 2}


def test_shares_follow_capacity() -> None:
    tasks = row(0, 12)
    clients = [running("a", [], 1), running("b", [], 2), running("c", [], 3)]
    assert Counter(target(clients, tasks).values()) == {"a": 2, "b": 4, "c": 6}


def test_the_running_client_keeps_a_task_only_while_it_may_host_it() -> None:
    task = TaskId(0, 0)
    clients = [
        ClientState("a", 1, frozenset([task]), frozenset(), {task: 0}),  # restoring from scratch
        ClientState("b", 1, frozenset(), frozenset([task]), {task: END}),
    ]
    result = place_stateful([task], clients, compute_lags([TaskSpec(task, END)], clients, 100))
    assert result.owners == {task: "b"}
    assert result.holders == {}


def test_stateless_tasks_fill_up_around_the_stateful_actives() -> None:
    stateless = row(1, 4)
    clients = [ClientState("a"), ClientState("b"), ClientState("c")]
    owners = place_stateless(stateless, clients, {"a": 3, "b": 1, "c": 0})
    assert Counter(owners.values()) == {"b": 2, "c": 2}


def test_stateless_tasks_stay_where_they_ran_when_that_is_balanced() -> None:
    stateless = row(1, 4)
    clients = [running("a", stateless[2:]), running("b", stateless[:2])]
    owners = place_stateless(stateless, clients, {})
    assert owners == {t: c.process_id for c in clients for t in c.previous_active}


def test_every_client_gets_a_task_when_there_are_enough() -> None:
    stateless = row(1, 3)
    clients = [running("a", [], 100), running("b", [], 50), running("c", [], 1)]
    owners = place_stateless(stateless, clients, {})
    assert set(owners.values()) == {"a", "b", "c"}
