"""The fetcher follows the member's assignment; partitions that stay keep their position."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.feed import LAG_FRESH_MS, RESUME_SETTLE_MS, PartitionFeed

A, B, C = (TopicPartition("t", p) for p in range(3))


@dataclass
class RecordingConsumer:
    """Stands in for AIOKafkaConsumer: remembers assign() and seek() calls."""

    assigned: list[list[TopicPartition]] = field(default_factory=list)
    seeks: dict[TopicPartition, int] = field(default_factory=dict)
    _fetcher: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(_records={}))
    """What kafka/aiokafka_internals.py's `release_fetched` empties: no answer held here."""

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.append(partitions)
        self.seeks.clear()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks[tp] = offset

    def last_poll_timestamp(self, tp: TopicPartition) -> int | None:
        return None


@dataclass
class AnsweringConsumer(RecordingConsumer):
    """Its fetches are answered when the test says, with the high watermark it says."""

    polled: dict[TopicPartition, int] = field(default_factory=dict)
    high: dict[TopicPartition, int] = field(default_factory=dict)

    def last_poll_timestamp(self, tp: TopicPartition) -> int | None:
        return self.polled.get(tp)

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get(tp)

    def pause(self, *partitions: TopicPartition) -> None:
        pass

    def resume(self, *partitions: TopicPartition) -> None:
        pass


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


def test_a_caught_up_partition_counts_as_unknown_for_a_while_after_the_broker_was_away() -> None:
    """Producers resend what they held back during an outage one partition after another: the
    partition answered first as caught up may be about to receive records older than the
    others'. Until it has settled, a task waits for it (KIP-695: lag unknown)."""
    consumer = AnsweringConsumer()
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 10, B: 10})
    consumer.high = {A: 10, B: 10}
    now = int(time.time() * 1000)

    def answered(at: int, *partitions: TopicPartition) -> None:
        consumer.polled.update((tp, at) for tp in partitions)
        feed.deliver({})

    answered(now - 3 * LAG_FRESH_MS, A, B)
    answered(now - 3 * LAG_FRESH_MS + 100, A, B)
    answered(now, A)  # A answers again after the gap; B's answers are still away
    assert feed.lag(A) is None  # caught up, but settling
    assert feed.lag(B) is None  # no fresh answer at all
    consumer.high[A] = 12
    assert feed.lag(A) == 2  # records known to be on the broker are waited for as always
    consumer.high[A] = 10

    settled = now - RESUME_SETTLE_MS - 1
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 10})
    answered(settled - 2 * LAG_FRESH_MS, A)
    answered(settled, A)  # the gap ended over RESUME_SETTLE_MS ago
    for at in range(settled + LAG_FRESH_MS // 2, now + 1, LAG_FRESH_MS // 2):
        answered(at, A)
    answered(now, A)
    assert feed.lag(A) == 0


def test_a_pause_is_no_gap_in_the_answers() -> None:
    consumer = AnsweringConsumer()
    feed = PartitionFeed(consumer)  # type: ignore[arg-type]
    feed.add({A: 10})
    consumer.high = {A: 10}
    now = int(time.time() * 1000)
    consumer.polled[A] = now - 3 * LAG_FRESH_MS
    feed.deliver({})
    feed.pause([A])
    feed.resume([A])
    consumer.polled[A] = now
    feed.deliver({})
    assert feed.lag(A) == 0
