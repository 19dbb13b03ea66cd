"""The canonical round-robin target streamjoin's moves are compared against."""

from __future__ import annotations

from collections import Counter

from streamjoin.assignment.tasks import ClientState, TaskId, TaskSpec
from streamjoin.assignment.tasks.round_robin_baseline import round_robin_assign, round_robin_target

TASKS = [TaskId(s, p) for s in range(2) for p in range(3)]


def test_equal_capacities_deal_sorted_tasks_in_turn() -> None:
    owners = round_robin_target({"b": 1, "a": 1}, reversed(TASKS))
    assert [owners[t] for t in TASKS] == ["a", "b", "a", "b", "a", "b"]


def test_dealing_follows_capacity_and_counts_what_was_dealt_before() -> None:
    assert Counter(round_robin_target({"a": 1, "b": 2}, TASKS).values()) == {"a": 2, "b": 4}
    owners = round_robin_target({"a": 1, "b": 1}, TASKS[:2], loads={"a": 2})
    assert list(owners.values()) == ["b", "b"]


def test_it_ignores_where_tasks_ran_before() -> None:
    before = [
        ClientState("a", 1, frozenset(TASKS[3:]), frozenset(), dict.fromkeys(TASKS[3:], 0)),
        ClientState("b", 1, frozenset(TASKS[:3]), frozenset(), dict.fromkeys(TASKS[:3], 0)),
    ]
    specs = [TaskSpec(t, 10) for t in TASKS[:4]] + [TaskSpec(t) for t in TASKS[4:]]
    result = round_robin_assign(before, specs)
    assert result.clients["a"].active == (TASKS[0], TASKS[2], TASKS[4])
    assert result.clients["b"].active == (TASKS[1], TASKS[3], TASKS[5])
    assert not result.followup
