from __future__ import annotations

from streamjoin.assignment.consumer.roundrobin import RoundRobinAssignor
from streamjoin.assignment.model import Subscription


def names(result) -> dict[str, list[str]]:
    return {m: [f"{t}-{p}" for t, p in a.partitions] for m, a in result.items()}


def test_seed_002_round_robin_table() -> None:
    topics = {"T1": 2, "T2": 1, "T3": 2, "T4": 1, "T5": 2}
    every, some = ("T1", "T2", "T3", "T4", "T5"), ("T1", "T3", "T5")
    members = {"C4": every, "C3": some, "C2": some, "C1": every}
    result = RoundRobinAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    assert names(result) == {
        "C1": ["T1-0", "T3-0", "T5-0"],
        "C2": ["T1-1", "T3-1", "T5-1"],
        "C3": [],
        "C4": ["T2-0", "T4-0"],
    }


def test_seed_003_example_1_round_robin_after_a_member_left() -> None:
    topics = {f"t{i}": 2 for i in range(4)}
    result = RoundRobinAssignor().assign(
        topics, {c: Subscription(tuple(topics)) for c in ("C0", "C2")}
    )
    assert names(result) == {
        "C0": ["t0-0", "t1-0", "t2-0", "t3-0"],
        "C2": ["t0-1", "t1-1", "t2-1", "t3-1"],
    }


def test_seed_003_example_2_round_robin_is_unbalanced() -> None:
    members = {"C0": ("t0",), "C1": ("t0", "t1"), "C2": ("t0", "t1", "t2")}
    result = RoundRobinAssignor().assign(
        {"t0": 1, "t1": 2, "t2": 3}, {m: Subscription(t) for m, t in members.items()}
    )
    assert names(result) == {"C0": ["t0-0"], "C1": ["t1-0"], "C2": ["t1-1", "t2-0", "t2-1", "t2-2"]}
