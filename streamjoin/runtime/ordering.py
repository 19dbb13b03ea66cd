"""Which buffered input record a task processes next: the lowest timestamp across its input
partitions, so a join sees both sides in event-time order (as Kafka Streams' PartitionGroup).

A partition with nothing buffered holds the task back only while more data may be on its way
and for at most `max_idle_ms` (Kafka Streams' max.task.idle.ms), so an idle side never stalls
the task forever.
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

    def next(self, now_ms: float, caught_up: Callable[[int], bool]) -> tuple[int, R] | None:
        """The (input index, record) to process now, or None to wait for more input.

        `caught_up(i)` tells whether input i has nothing more to fetch right now; an empty input
        that is caught up does not hold the others back.
        """
        heads = [(buf[0].timestamp, i) for i, buf in enumerate(self._buffers) if buf]
        if not heads:
            self._idle_since = None
            return None
        waiting = any(not buf and not caught_up(i) for i, buf in enumerate(self._buffers))
        if waiting:
            if self._idle_since is None:
                self._idle_since = now_ms
            if now_ms - self._idle_since < self._max_idle_ms:
                return None
        else:
            self._idle_since = None
        _, index = min(heads)
        return index, self._buffers[index].popleft()
