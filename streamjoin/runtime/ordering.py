"""Which buffered input record a task processes next: the lowest timestamp across its input
partitions, so a join sees both sides in event-time order (as Kafka Streams' PartitionGroup).

A partition with nothing buffered holds the task back when records are known to be waiting for
it on the broker (its lag is above 0: the next fetch brings them), and for at most `max_idle_ms`
while its lag is not known yet; a partition that is caught up holds nothing back, so an idle
side never stalls the task (Kafka Streams' max.task.idle.ms, KIP-695).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = ("HasTimestamp", "TimestampOrderedInputs")


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
        heads = [(buf[0].timestamp, i) for i, buf in enumerate(self._buffers) if buf]
        if not heads:
            self._idle_since = None
            return None
        lags = [lag(i) for i, buf in enumerate(self._buffers) if not buf]
        if any(n is not None and n > 0 for n in lags):
            return None  # the next fetch brings them
        if None in lags:
            if self._idle_since is None:
                self._idle_since = now_ms
            if now_ms - self._idle_since < self._max_idle_ms:
                return None
        else:
            self._idle_since = None
        _, index = min(heads)
        return index, self._buffers[index].popleft()
