"""Which buffered input record a task processes next: the lowest timestamp across its input
partitions, so a join sees both sides in event-time order (as Kafka Streams' PartitionGroup).

A partition with nothing buffered holds the task back (as Kafka Streams' max.task.idle.ms,
KIP-695 semantics):
- while records are known to be waiting for it on the broker (lag above 0: the next fetch
  brings them);
- while its lag is not known yet (no fetch answered), for at most `UNKNOWN_LAG_WAIT_MS`, after
  which the task goes on with a warning: a side the fetcher cannot reach must not stall it;
- when it is caught up, for at most `max_idle_ms` (default 0: do not wait for producers).
Processing the other side ahead of data that exists would advance stream time past it and
drop it as late, so waiting for known or possible data is a matter of correctness.
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
        self._idle_since: float | None = None
        self._warned = False

    def add(self, index: int, records: Iterable[R]) -> None:
        self._buffers[index].extend(records)

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
                self._idle_since = None
                if left[0].timestamp <= right[0].timestamp:
                    return 0, left.popleft()
                return 1, right.popleft()
        heads = [(buf[0].timestamp, i) for i, buf in enumerate(self._buffers) if buf]
        if not heads:
            self._idle_since = None
            return None
        lags = [lag(i) for i, buf in enumerate(self._buffers) if not buf]
        if any(n is not None and n > 0 for n in lags):
            self._idle_since = None
            return None  # the next fetch brings them
        if lags:
            if self._idle_since is None:
                self._idle_since = now_ms
            limit = UNKNOWN_LAG_WAIT_MS if None in lags else self._max_idle_ms
            waited = now_ms - self._idle_since
            if waited < limit:
                return None
            if None in lags and not self._warned:
                self._warned = True
                logger.warning(
                    "an input has not been fetched for %.0f s; processing the other ahead of it "
                    "(its records, when they come, may be late)",
                    waited / 1000,
                )
        else:
            self._idle_since = None
        _, index = min(heads)
        return index, self._buffers[index].popleft()
