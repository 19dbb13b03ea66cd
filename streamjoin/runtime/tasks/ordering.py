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

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = ("UNKNOWN_LAG_WAIT_MS", "HasTimestamp", "TimestampOrderedInputs")

logger = logging.getLogger(__name__)

UNKNOWN_LAG_WAIT_MS = 30_000


class HasTimestamp(Protocol):
    @property
    def timestamp(self) -> int: ...


R = TypeVar("R", bound=HasTimestamp)


class TimestampOrderedInputs(Generic[R]):
    """Buffers for a fixed set of inputs (by index); `next` picks what to process."""

    def __init__(self, inputs: int, max_idle_ms: int) -> None:
        self._buffers: list[deque[R]] = [deque() for _ in range(inputs)]
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

    def next(self, now_ms: float, lag: Callable[[int], int | None]) -> tuple[int, R] | None:
        """The (input index, record) to process now, or None to wait for more input.

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
                    return 0, self._take(0)
                return 1, self._take(1)
        waiting = self._waiting_since
        heads = [(buf[0].timestamp, waiting[i], i) for i, buf in enumerate(buffers) if buf]
        if not heads:
            return None
        empty_since = self._empty_since
        for index in [i for i in empty_since if self._buffers[i]]:
            del empty_since[index]
        lags = {i: lag(i) for i, buf in enumerate(self._buffers) if not buf}
        coming = [i for i, n in lags.items() if n is not None and n > 0]
        if coming:
            for index in coming:
                empty_since.pop(index, None)
            return None  # the next fetch brings them
        if lags:
            since = max(empty_since.setdefault(i, now_ms) for i in lags)
            limit = UNKNOWN_LAG_WAIT_MS if None in lags.values() else self._max_idle_ms
            waited = now_ms - since
            if waited < limit:
                return None
            if None in lags.values() and not self._warned:
                self._warned = True
                logger.warning(
                    "an input has not been fetched for %.0f s; processing the other ahead of it "
                    "(its records, when they come, may be late)",
                    waited / 1000,
                )
        _, _, index = min(heads)
        return index, self._take(index)

    def _take(self, index: int) -> R:
        buffer = self._buffers[index]
        record = buffer.popleft()
        if buffer:
            self._sequence += 1
            self._waiting_since[index] = self._sequence
        return record
