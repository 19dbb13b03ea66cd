from __future__ import annotations

from streamjoin.assignment.consumer.topic_layout import (
    TopicLayout,
    group_by_topic,
    topic_partitions,
)
from streamjoin.assignment.model import TopicPartition


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
