from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.range import RangeAssignor
from streamjoin.assignment.model import Subscription, TopicPartition


def names(result) -> dict[str, list[str]]:
    return {m: [f"{t}-{p}" for t, p in a.partitions] for m, a in result.items()}


def test_seed_002_range_table() -> None:
    topics = {"T1": 2, "T2": 1, "T3": 2, "T4": 1, "T5": 2}
    every, some = ("T1", "T2", "T3", "T4", "T5"), ("T1", "T3", "T5")
    members = {"C1": every, "C2": some, "C3": some, "C4": every}
    result = RangeAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    assert names(result) == {
        "C1": ["T1-0", "T2-0", "T3-0", "T4-0", "T5-0"],
        "C2": ["T1-1", "T3-1", "T5-1"],
        "C3": [],
        "C4": [],
    }


def test_kafka_javadoc_example() -> None:
    result = RangeAssignor().assign(
        {"t0": 3, "t1": 3}, {"C1": Subscription(("t0", "t1")), "C0": Subscription(("t1", "t0"))}
    )
    assert names(result) == {"C0": ["t0-0", "t0-1", "t1-0", "t1-1"], "C1": ["t0-2", "t1-2"]}


@given(st.integers(0, 20), st.integers(1, 6))
def test_consecutive_ranges_first_members_take_the_extra(partitions: int, members: int) -> None:
    ids = [f"m{i}" for i in range(members)]
    result = RangeAssignor().assign({"t": partitions}, {m: Subscription(("t",)) for m in ids})
    expected, start = {}, 0
    for i, m in enumerate(ids):
        size = partitions // members + (1 if i < partitions % members else 0)
        expected[m] = tuple(TopicPartition("t", p) for p in range(start, start + size))
        start += size
    assert {m: a.partitions for m, a in result.items()} == expected
