"""When the worker fetched its records, and the newest timestamp fetched of each partition: what
the hold for a quiet key_by input needs (upstream.py, QUIET_WAIT_MS).

A producer sends each partition's records in batches of its own, so records of one partition
may reach the broker a moment after newer records of another, though the producer sent them
in time order. A key_by input partition that is caught up but has nothing as new as a record
fetched a moment ago may be about to receive older records. Only records fetched within the
last QUIET_WAIT_MS are remembered; anything older no longer waits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from streamjoin.assignment.model import TopicPartition

__all__ = ("QUIET_WAIT_MS", "Arrivals")

QUIET_WAIT_MS = 2_000


class Arrivals:
    def __init__(self) -> None:
        self._newest: dict[TopicPartition, int] = {}
        self._batches: dict[TopicPartition, deque[tuple[int, float]]] = {}
        """Per partition, (newest timestamp, when fetched) of each batch of the last
        QUIET_WAIT_MS."""
        self._settled: dict[TopicPartition, int] = {}
        """Per partition, the newest timestamp fetched before that."""

    def fetched(self, tp: TopicPartition, records: Sequence[Any], now_ms: float) -> None:
        newest = self._newest.get(tp, records[0].timestamp)
        for record in records:  # a repartition partition several workers write is not in order
            newest = max(newest, record.timestamp)
        self._newest[tp] = newest
        batches = self._batches.get(tp)
        if batches is None:
            batches = self._batches[tp] = deque()
        batches.append((newest, now_ms))
        self._prune(tp, batches, now_ms)

    def newest(self, tp: TopicPartition) -> int | None:
        """The newest timestamp fetched of `tp` (None: nothing yet)."""
        return self._newest.get(tp)

    def settled(self, tp: TopicPartition, now_ms: float) -> int | None:
        """The newest timestamp of `tp` fetched over QUIET_WAIT_MS ago (None: none): for a
        partition in time order, every record up to it was fetched that long ago."""
        batches = self._batches.get(tp)
        if batches:
            self._prune(tp, batches, now_ms)
        return self._settled.get(tp)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._newest.pop(tp, None)
            self._batches.pop(tp, None)
            self._settled.pop(tp, None)

    def _prune(self, tp: TopicPartition, batches: deque[tuple[int, float]], now_ms: float) -> None:
        while batches and now_ms - batches[0][1] >= QUIET_WAIT_MS:
            self._settled[tp] = batches.popleft()[0]
