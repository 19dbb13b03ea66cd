"""Keeps an aiokafka consumer's manual assignment equal to what the group member owns.

aiokafka's `assign()` replaces the whole assignment and forgets every position, so each change
re-seeks the partitions that stay to the next offset the application has not yet received: they
lose at most the records buffered but not delivered, which the next fetch brings back. Positions
are tracked here, per delivered record; a partition whose records have not been delivered yet
goes back to its committed offset, or to the consumer's `auto_offset_reset` policy when the
group has none (group/offset_reset.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping

from aiokafka import AIOKafkaConsumer, ConsumerRecord

from streamjoin.assignment.model import TopicPartition, sorted_partitions
from streamjoin.kafka.aiokafka_internals import (
    FetchSizes,
    fetch_position,
    release_fetched,
    set_fetch_sizes,
)
from streamjoin.kafka.fetch_sizes import fetch_bytes_needed, partition_fetch_bytes

__all__ = ("LAG_FRESH_MS", "RESUME_SETTLE_MS", "PartitionFeed")

LAG_FRESH_MS = 5_000
"""How old a fetch answer may be for its high watermark to count as the partition's lag: a
caught-up partition is answered at least every fetch wait (0.5 s by default; the worker asks for
50 ms), so an older answer means the fetches stopped (a broker restarting) and records may be
waiting that the lag does not show."""

RESUME_SETTLE_MS = 10_000
"""After such a gap in a partition's fetch answers (the broker away, then back), its lag counts
as unknown while it is 0, for this long after the answers resume: producers resend what they
held back during the gap one partition after another, so a partition answered first as caught
up may be about to receive older records than the others (KIP-695: a task waits for a
partition whose lag is unknown)."""

logger = logging.getLogger(__name__)

Records = dict[TopicPartition, list[ConsumerRecord[object, object]]]


class PartitionFeed:
    """The partitions an aiokafka consumer fetches, and the next offset to deliver for each."""

    def __init__(
        self,
        consumer: AIOKafkaConsumer,
        *,
        read_committed: bool = False,
        fetch_buffer_bytes: int | None = None,
    ) -> None:
        """`read_committed`: the consumer reads committed records only; lag is counted to the
        last stable offset. `fetch_buffer_bytes`: what the fetched records not yet read may
        hold, all partitions together (kafka/fetch_sizes.py); None leaves aiokafka's sizes."""
        self._consumer = consumer
        self._fetch_buffer_bytes = fetch_buffer_bytes
        self._fetch_overrun_told = 0
        self._read_committed = read_committed
        self._next: dict[TopicPartition, int | None] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._assigned = False
        self._answered: dict[TopicPartition, int] = {}
        """When each partition's fetch was last answered, as last seen."""
        self._resumed: dict[TopicPartition, int] = {}
        """When its answers resumed after a gap."""

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        return frozenset(self._next)

    @property
    def assigned(self) -> bool:
        """Whether the consumer was given an assignment yet (even an empty one)."""
        return self._assigned

    def uncommitted(self) -> dict[TopicPartition, int]:
        """Next offset to deliver, for each partition where it moved since the last commit."""
        return {
            tp: offset
            for tp, offset in self._next.items()
            if offset is not None and self._committed.get(tp) != offset
        }

    def mark_committed(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._committed.update((tp, o) for tp, o in offsets.items() if tp in self._next)

    def add(self, committed: Mapping[TopicPartition, int | None]) -> None:
        """Start fetching these partitions from their committed offsets (None: reset policy)."""
        self._next.update(committed)
        self.mark_committed({tp: o for tp, o in committed.items() if o is not None})
        self._reassign()

    def remove(
        self, partitions: Iterable[TopicPartition], *, reassign: bool = True
    ) -> dict[TopicPartition, int]:
        """Stop delivering these partitions; returns their positions not yet committed, for a
        final commit.

        `reassign=False` leaves the fetcher alone (the consumer is about to stop): aiokafka
        0.14's `stop()` hangs for good when it lands while the fetcher is still cancelling the
        fetches of a just-changed assignment (the fetcher swallows its own cancellation).
        """
        gone = {tp: self._next.pop(tp, None) for tp in partitions}
        committed = {tp: self._committed.pop(tp, None) for tp in gone}
        if reassign:
            self._reassign()
        return {tp: o for tp, o in gone.items() if o is not None and o != committed[tp]}

    def restart(self, partitions: Iterable[TopicPartition]) -> None:
        """Deliver these partitions from wherever the consumer was moved to (a reset policy
        applied), even below the position delivered so far: the log itself restarted."""
        for tp in partitions:
            if tp in self._next:
                self._next[tp] = None

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop delivering these partitions (kept across reassignments) until `resume`.

        `fetch` leaves them out rather than pausing them in aiokafka: aiokafka fetches no more
        of a partition while its last answer is unread, so that answer (one per partition,
        sized by `_size_fetches`) waits for the resume. aiokafka's own pause drops a half-read
        answer instead, to fetch it again, and the parsed answer it drops is a reference cycle
        with its iterator: a worker's collector, whose survivors are frozen, frees it only at
        its hourly full collection (runtime/process/gc_tuning.py). Measured on a worker behind
        live traffic, its input buffers full and pausing: 98 dropped answers held 72 MiB."""
        chosen = set(partitions) & self._next.keys()
        self._paused |= chosen
        for tp in chosen:  # a pause is no gap: its answers resume with nothing held back
            self._answered.pop(tp, None)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        chosen = set(partitions) & self._paused
        self._paused -= chosen
        for tp in chosen:
            self._answered.pop(tp, None)

    def lag(self, tp: TopicPartition) -> int | None:
        """Records between the next one to deliver and the high watermark of the last fetch;
        None while that is not known, or no longer known: a fetch answer older than
        `LAG_FRESH_MS` (paused, or a broker away) says nothing of what was produced since."""
        offset = self._next.get(tp)
        if tp not in self._next:
            return None
        consumer = self._consumer
        highwater: int | None = (
            consumer.last_stable_offset(tp) if self._read_committed else consumer.highwater(tp)
        )
        polled: int | None = consumer.last_poll_timestamp(tp)
        now_ms = time.time() * 1000
        if highwater is None or polled is None or now_ms - polled > LAG_FRESH_MS:
            return None
        settling = now_ms - self._resumed.get(tp, -RESUME_SETTLE_MS) < RESUME_SETTLE_MS
        if self._read_committed:
            # Transaction markers take offsets no record is delivered at: the fetcher's position
            # moves past them, the last delivered offset does not.
            offset = max(offset or 0, fetch_position(consumer, tp) or 0)
        if offset is None:
            # Nothing delivered and nothing committed yet: an empty log is caught up; otherwise
            # where the reset policy starts is not known here.
            return 0 if highwater == 0 else None
        behind = max(0, highwater - offset)
        return None if behind == 0 and settling else behind

    def _reassign(self) -> None:
        # assign() and the seeks run without an await in between, so the fetcher never sees a
        # partition that stays without its position.
        self._paused &= self._next.keys()
        self._assigned = True
        release_fetched(self._consumer)  # assign() drops them, leaving garbage (see there)
        self._consumer.assign(list(sorted_partitions(self._next)))
        self._size_fetches()
        for tp, offset in self._next.items():
            if offset is not None:
                self._consumer.seek(tp, offset)

    def _size_fetches(self) -> None:
        """Per-partition fetch limit for this many partitions, within the fetch buffers' bytes;
        where the floor takes more, say so once for each larger assignment."""
        total = self._fetch_buffer_bytes
        if total is None:
            return
        partitions = len(self._next)
        each = partition_fetch_bytes(total, partitions)
        set_fetch_sizes(self._consumer, FetchSizes(each, max(each, total)))
        needed = fetch_bytes_needed(total, partitions)
        if needed > total and partitions > self._fetch_overrun_told:
            self._fetch_overrun_told = partitions
            logger.warning(
                "fetch buffers of %d partitions may hold %.1f MiB at %d KiB each, more than the "
                "%.1f MiB the memory budget gives them: give the worker a larger --memory, or "
                "fewer partitions per worker",
                partitions,
                needed / (1 << 20),
                each >> 10,
                total / (1 << 20),
            )

    async def fetch(self, *, timeout_ms: int, max_records: int | None) -> Records:
        """The records fetched for the partitions not paused, waiting up to `timeout_ms`."""
        wanted = sorted_partitions(self._next.keys() - self._paused)
        if not wanted:  # (getmany() of no partitions means all of them)
            await asyncio.sleep(timeout_ms / 1000)
            return {}
        fetched = await self._consumer.getmany(
            *wanted, timeout_ms=timeout_ms, max_records=max_records
        )
        return self.deliver(fetched)

    def deliver(
        self, fetched: Mapping[TopicPartition, list[ConsumerRecord[object, object]]]
    ) -> Records:
        """Drop records of partitions no longer owned or already delivered; advance positions."""
        self._note_answers()
        delivered: Records = {}
        for raw_tp, records in fetched.items():
            tp = TopicPartition(raw_tp.topic, raw_tp.partition)
            if tp not in self._next:
                continue
            start = self._next[tp]
            fresh = (
                records
                if start is None or (records and records[0].offset >= start)
                else [r for r in records if r.offset >= start]
            )
            if fresh:
                delivered[tp] = fresh
                self._next[tp] = fresh[-1].offset + 1
        return delivered

    def _note_answers(self) -> None:
        """Note when answers resume after a gap (see RESUME_SETTLE_MS); after every fetch, so
        a gap is one in the answers, not in the questions asked here."""
        answered, consumer = self._answered, self._consumer
        for tp in self._next:
            polled = consumer.last_poll_timestamp(tp)
            if polled is None:
                continue
            previous = answered.get(tp)
            if previous is not None and polled - previous > LAG_FRESH_MS:
                self._resumed[tp] = polled
            answered[tp] = polled
