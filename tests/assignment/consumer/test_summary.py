from __future__ import annotations

from streamjoin.assignment.consumer.summary import balance, is_balanced, movement, problems
from streamjoin.assignment.model import Assignment, TopicPartition


def a(*texts: str) -> Assignment:
    return Assignment(tuple(TopicPartition(t[0:2], int(t[3:])) for t in texts))


def test_balance_follows_kip_54s_definition() -> None:
    # Counts 3 and 1, but the 1-member cannot consume t1: balanced by the second clause.
    assignment = {"x": a("t1-0", "t1-1", "t1-2"), "y": a("t0-0")}
    assert is_balanced(assignment, {"x": ["t0", "t1"], "y": ["t0"]})
    assert not is_balanced(assignment, {"x": ["t0", "t1"], "y": ["t0", "t1"]})
    assert balance(assignment, {"x": ["t1"], "y": ["t0"]}) == {
        "min": 1,
        "max": 3,
        "spread": 2,
        "balanced": True,
    }


def test_problems_name_each_invalid_partition() -> None:
    assignment = {"x": a("t0-0", "t0-5", "t1-0"), "y": a("t0-0")}
    found = problems(
        assignment,
        {"t0": 2, "t1": 1},
        {"x": ["t0"], "y": ["t0"]},
        complete=True,
        co_partitioned=False,
    )
    assert found == [
        "t0-5 does not exist but went to x",
        "t1-0 went to x, not subscribed to it",
        "t0-0 went to both x and y",
        "t0-1 is not assigned",
    ]


def test_co_partitioning_problems() -> None:
    assignment = {"x": a("t0-1"), "y": a("t1-1")}
    found = problems(
        assignment,
        {"t0": 2, "t1": 2},
        {"x": ["t0"], "y": ["t1"]},
        complete=False,
        co_partitioned=True,
    )
    assert found == ["partition number 1 went to both x and y"]


def test_long_problem_lists_are_cut() -> None:
    found = problems({"x": a()}, {"t0": 50}, {"x": ["t0"]}, complete=True, co_partitioned=False)
    assert len(found) == 21
    assert found[-1] == "... and 30 more"


def test_movement_counts_kept_moved_released_and_new() -> None:
    owned = {"x": a("t0-0", "t0-1", "t0-2").partitions, "gone": a("t0-3").partitions}
    after = {"x": a("t0-0", "t0-4"), "y": a("t0-1", "t0-3")}
    moved = movement(after, owned)
    assert (moved.kept, moved.moved, moved.released, moved.new) == (1, 2, 1, 1)
    assert moved.moves == [
        (TopicPartition("t0", 1), ("x",), "y"),
        (TopicPartition("t0", 3), ("gone",), "y"),
    ]
