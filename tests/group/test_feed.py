"""The fetcher follows the member's assignment; partitions that stay keep their position."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.feed import PartitionFeed

A, B, C = (TopicPartition("t", p) for p in range(3))


@dataclass
class RecordingConsumer:
    """Stands in for AIOKafkaConsumer: remembers assign() and seek() calls."""

    assigned: list[list[TopicPartition]] = field(default_factory=list)
    seeks: dict[TopicPartition, int] = field(default_factory=dict)

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.append(partitions)
        self.seeks.clear()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks[tp] = offset


@dataclass
class Record:
    offset: int


def test_added_partitions_start_at_their_committed_offset_or_the_reset_policy() -> None:
    consumer = RecordingConsumer()
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 10, B: None})
    assert consumer.assigned[-1] == [A, B]
    assert consumer.seeks == {A: 10}  # B is left to auto_offset_reset


def test_partitions_that_stay_resume_after_the_last_delivered_record() -> None:
    consumer = RecordingConsumer()
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 10, B: None})
    delivered = feed.deliver({A: [Record(10), Record(11)], B: [Record(0)]})  # type: ignore[dict-item]
    assert {tp: [r.offset for r in rs] for tp, rs in delivered.items()} == {A: [10, 11], B: [0]}
    feed.add({C: 5})
    assert consumer.assigned[-1] == [A, B, C]
    assert consumer.seeks == {A: 12, B: 1, C: 5}
    assert feed.uncommitted() == {A: 12, B: 1}
    feed.mark_committed({B: 1})
    assert feed.remove([A, B]) == {A: 12}  # B's position is committed already
    assert consumer.assigned[-1] == [C]
    assert consumer.seeks == {C: 5}


def test_records_of_partitions_no_longer_owned_or_already_delivered_are_dropped() -> None:
    consumer = RecordingConsumer()
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 3})
    fetched: dict[Any, Any] = {A: [Record(2), Record(3)], B: [Record(0)]}
    assert {tp: [r.offset for r in rs] for tp, rs in feed.deliver(fetched).items()} == {A: [3]}
    assert feed.uncommitted() == {A: 4}


def test_removing_while_stopping_leaves_the_fetcher_alone() -> None:
    consumer = RecordingConsumer()
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 3, B: 4})
    calls = len(consumer.assigned)
    feed.deliver({A: [Record(3)]})  # type: ignore[dict-item]
    assert feed.remove([A, B], reassign=False) == {A: 4}
    assert len(consumer.assigned) == calls
    assert feed.partitions == frozenset()
