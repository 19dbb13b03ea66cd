from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.consumer_protocol import encode_assignment
from streamjoin.assignment.consumer.topic_layout import (
    NumberedPartitions,
    TopicLayout,
    group_by_topic,
    topic_partitions,
)
from streamjoin.assignment.model import Assignment, TopicPartition


def test_partitions_are_numbered_across_topics_in_name_order() -> None:
    layout = TopicLayout({"b": 2, "a": 3, "gone": 0}, ["b", "a", "gone", "unknown"])
    assert layout.topics == ("a", "b")
    assert layout.total == 5
    assert layout.to_partitions([4, 0]) == (TopicPartition("b", 1), TopicPartition("a", 0))
    assert layout.to_partitions([3]) == (TopicPartition("b", 0),)
    assert layout.to_partitions([]) == ()


def test_numbers_drop_partitions_that_do_not_exist_or_are_not_subscribed() -> None:
    layout = TopicLayout({"a": 3, "b": 2}, ["a", "b"])
    claims = {"a": [2, 7, -1], "b": [0, 1], "zzz": [0]}
    assert layout.numbers(claims, frozenset({"a", "zzz"})) == [2]
    assert layout.numbers({"a": [0, 1]}, frozenset({"a"})) == [0, 1]


def test_topic_partitions_are_cached() -> None:
    assert topic_partitions("t", 3) is topic_partitions("t", 3)
    assert topic_partitions("t", 2) == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert topic_partitions("t", -1) == ()


def test_topics_share_their_partition_numbers() -> None:
    """One int object per number (small ints are shared anyway; these are not)."""
    assert topic_partitions("x", 1000)[999].partition is topic_partitions("y", 1200)[999].partition


def test_group_by_topic_keeps_the_given_order() -> None:
    parts = [TopicPartition("b", 1), TopicPartition("a", 0), TopicPartition("b", 0)]
    assert group_by_topic(parts) == {"b": [1, 0], "a": [0]}


@st.composite
def numbered(draw: st.DrawFn) -> tuple[TopicLayout, list[int] | range]:
    """A layout and ascending numbers of it: a list, or a range as a fresh group's deal gives."""
    counts = {f"t{i}": draw(st.integers(0, 12)) for i in range(draw(st.integers(1, 4)))}
    layout = TopicLayout(counts, counts)
    if layout.total and draw(st.booleans()):
        start = draw(st.integers(0, layout.total - 1))
        return layout, range(start, layout.total, draw(st.integers(1, 5)))
    chosen = draw(st.sets(st.integers(0, max(layout.total - 1, 0)), max_size=layout.total))
    return layout, sorted(chosen) if layout.total else []


@given(numbered(), st.binary(max_size=4))
def test_a_compact_assignment_is_the_assignment_of_its_partitions(
    case: tuple[TopicLayout, list[int] | range], user_data: bytes
) -> None:
    """Read, compared and encoded for SyncGroup, it is what its TopicPartitions make."""
    layout, numbers = case
    plain = Assignment(layout.to_partitions(numbers), user_data)
    compact = Assignment(NumberedPartitions(layout, numbers), user_data)
    assert [(t, list(p)) for t, p in compact.by_topic()] == plain.by_topic()
    assert encode_assignment(compact) == encode_assignment(plain)
    assert compact == plain and hash(compact) == hash(plain)
    assert compact.partitions == tuple(sorted(plain.partitions))


def test_a_few_partitions_of_a_large_layout_are_made_without_its_table() -> None:
    layout = TopicLayout({"a": 50, "b": 30, "c": 0}, ["a", "b", "c"])
    expected = (
        TopicPartition("b", 29),
        TopicPartition("a", 0),
        TopicPartition("b", 0),
        TopicPartition("a", 49),
    )
    assert layout.to_partitions([79, 0, 50, 49]) == expected
    assert [layout.number(tp) for tp in expected] == [79, 0, 50, 49]
    assert layout.number(TopicPartition("b", 30)) is None
    assert layout.number(TopicPartition("c", 0)) is None
    assert layout.to_partitions(range(80)) == tuple(
        TopicPartition(t, p) for t, n in (("a", 50), ("b", 30)) for p in range(n)
    )
