"""Which buffered input record a task processes next: the lowest timestamp across its input
partitions, so a join sees both sides in event-time order (as Kafka Streams' PartitionGroup).
Between equal timestamps the input that has waited longer goes first: the one whose records
came, or whose last record was taken, earlier (Kafka Streams' queue of partitions by head time
does the same for two partitions).

A partition with nothing buffered holds the task back (as Kafka Streams' max.task.idle.ms,
KIP-695 semantics):
- while records are known to be waiting for it on the broker (lag above 0: the next fetch
  brings them);
- while its lag is not known yet (no fetch answered), for at most `UNKNOWN_LAG_WAIT_MS`, after
  which the task goes on with a warning: a side the fetcher cannot reach must not stall it;
- when it is caught up, for at most `max_idle_ms` (default 0: do not wait for producers).
Processing the other side ahead of data that exists would advance stream time past it and make
it late (its partners may be gone from their store by then), so waiting for known or possible
data is a matter of correctness.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = (
    "NO_LIMIT",
    "UNKNOWN_LAG_WAIT_MS",
    "WAITING",
    "HasTimestamp",
    "TimeSortedBuffer",
    "TimestampOrderedInputs",
)

logger = logging.getLogger(__name__)

UNKNOWN_LAG_WAIT_MS = 30_000

NO_LIMIT = 2**62
"""A timestamp bound no record reaches: process without holding back; and what
`next_timestamp` says of a task with nothing to process and nothing known to come."""
WAITING = -(2**62)
"""What `next_timestamp` says of a task waiting for an input: its next record may be older
than any timestamp."""


class HasTimestamp(Protocol):
    @property
    def timestamp(self) -> int: ...

    @property
    def offset(self) -> int: ...


R = TypeVar("R", bound=HasTimestamp)


class TimeSortedBuffer(Generic[R]):
    """An input buffer that hands out its records in timestamp order (offset order among
    equal ones), for a repartition partition that several workers write: each writes it in
    time order, but their records interleave as they arrive. It knows the lowest offset it
    still holds, below which everything is processed (what a commit may say)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, R]] = []
        self._arrived: deque[int] = deque()
        self._taken: set[int] = set()
        self.highest_taken = -1

    def __len__(self) -> int:
        return len(self._heap)

    def __getitem__(self, index: int) -> R:
        if index != 0:
            raise IndexError("only the first record of a sorted buffer is at hand")
        return self._heap[0][2]

    def extend(self, records: Iterable[R]) -> None:
        heap, arrived = self._heap, self._arrived
        for record in records:
            heapq.heappush(heap, (record.timestamp, record.offset, record))
            arrived.append(record.offset)

    def popleft(self) -> R:
        _, offset, record = heapq.heappop(self._heap)
        self._taken.add(offset)
        self.highest_taken = max(self.highest_taken, offset)
        return record

    def clear(self) -> None:
        self._heap.clear()
        self._arrived.clear()
        self._taken.clear()

    def lowest_offset(self) -> int | None:
        """The lowest offset still here (None: empty)."""
        arrived, taken = self._arrived, self._taken
        while arrived and arrived[0] in taken:
            taken.discard(arrived.popleft())
        return arrived[0] if arrived else None


class TimestampOrderedInputs(Generic[R]):
    """Buffers for a fixed set of inputs (by index); `next` picks what to process. An input in
    `time_sorted` gives its records in timestamp order instead of as they came
    (TimeSortedBuffer)."""

    def __init__(
        self, inputs: int, max_idle_ms: int, time_sorted: frozenset[int] = frozenset()
    ) -> None:
        self._buffers: list[deque[R] | TimeSortedBuffer[R]] = [
            TimeSortedBuffer() if i in time_sorted else deque() for i in range(inputs)
        ]
        self._max_idle_ms = max_idle_ms
        self._empty_since: dict[int, float] = {}
        """Inputs found empty (and caught up, or not fetched yet) while others had records,
        and since when. An entry goes once its input has records or lag: like Kafka Streams'
        idle deadlines, a task whose buffers drain does not wait again for an input that
        stayed empty all along."""
        self._warned = False
        self._waiting_since = [0] * inputs
        """Per input, when (a sequence number) its head began to wait: when records came to
        it empty, or when its previous record was taken. Decides between equal timestamps."""
        self._sequence = 0

    def add(self, index: int, records: Iterable[R]) -> None:
        buffer = self._buffers[index]
        if not buffer:
            self._sequence += 1
            self._waiting_since[index] = self._sequence
        buffer.extend(records)

    def buffered(self) -> int:
        return sum(len(buffer) for buffer in self._buffers)

    def buffered_for(self, index: int) -> int:
        return len(self._buffers[index])

    def clear(self, index: int) -> None:
        self._buffers[index].clear()

    def heads(self) -> list[R | None]:
        """Each input's next record (None: nothing buffered)."""
        return [buffer[0] if buffer else None for buffer in self._buffers]

    def sorted_positions(self) -> dict[int, int]:
        """For each time-sorted input that has processed a record: the offset below which all
        it was given is processed (its lowest buffered offset, else the highest taken + 1)."""
        positions = {}
        for i, buffer in enumerate(self._buffers):
            if isinstance(buffer, TimeSortedBuffer) and buffer.highest_taken >= 0:
                lowest = buffer.lowest_offset()
                positions[i] = buffer.highest_taken + 1 if lowest is None else lowest
        return positions

    def next(
        self, now_ms: float, lag: Callable[[int], int | None], limit: int = NO_LIMIT
    ) -> tuple[int, R] | None:
        """The (input index, record) to process now, or None to wait for more input, or
        while the record due is later than `limit` (a join holding back for its upstream).

        `lag(i)` is how many records of input i are on the broker but not yet buffered here
        (None: not known yet).
        """
        buffers = self._buffers
        if len(buffers) == 2:  # a join's usual case, made cheap
            left, right = buffers
            if left and right:
                if self._empty_since:
                    self._empty_since.clear()
                left_ts, right_ts = left[0].timestamp, right[0].timestamp
                waiting = self._waiting_since
                if left_ts < right_ts or (left_ts == right_ts and waiting[0] < waiting[1]):
                    return None if left_ts > limit else (0, self._take(0))
                return None if right_ts > limit else (1, self._take(1))
        index = self._due(now_ms, lag)
        if index < 0 or buffers[index][0].timestamp > limit:
            return None
        return index, self._take(index)

    def next_timestamp(self, now_ms: float, lag: Callable[[int], int | None]) -> int:
        """The timestamp of the record `next` would take now; WAITING while it waits for an
        input (whose records may be older); NO_LIMIT with nothing buffered and nothing known
        to be on the broker. What a task upstream of a repartition topic may still write
        there is no older than this (for inputs in time order)."""
        index = self._due(now_ms, lag)
        if index >= 0:
            return self._buffers[index][0].timestamp
        if index == _WAIT:
            return WAITING
        for i in range(len(self._buffers)):
            n = lag(i)
            if n is None or n > 0:
                return WAITING
        return NO_LIMIT

    def _due(self, now_ms: float, lag: Callable[[int], int | None]) -> int:
        """The index of the input whose head is due, _WAIT, or _EMPTY (nothing buffered)."""
        waiting = self._waiting_since
        heads = [(buf[0].timestamp, waiting[i], i) for i, buf in enumerate(self._buffers) if buf]
        if not heads:
            return _EMPTY
        empty_since = self._empty_since
        for index in [i for i in empty_since if self._buffers[i]]:
            del empty_since[index]
        lags = {i: lag(i) for i, buf in enumerate(self._buffers) if not buf}
        coming = [i for i, n in lags.items() if n is not None and n > 0]
        if coming:
            for index in coming:
                empty_since.pop(index, None)
            return _WAIT  # the next fetch brings them
        if lags:
            since = max(empty_since.setdefault(i, now_ms) for i in lags)
            limit = UNKNOWN_LAG_WAIT_MS if None in lags.values() else self._max_idle_ms
            waited = now_ms - since
            if waited < limit:
                return _WAIT
            if None in lags.values() and not self._warned:
                self._warned = True
                logger.warning(
                    "an input has not been fetched for %.0f s; processing the other ahead of it "
                    "(its records, when they come, may be late)",
                    waited / 1000,
                )
        return min(heads)[2]

    def _take(self, index: int) -> R:
        buffer = self._buffers[index]
        record = buffer.popleft()
        if buffer:
            self._sequence += 1
            self._waiting_since[index] = self._sequence
        return record


_WAIT = -1
_EMPTY = -2
