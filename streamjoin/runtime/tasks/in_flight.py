"""The records this worker's key_by tasks wrote to repartition partitions that its own join
tasks have not fetched yet: a join holds back behind the oldest of them (upstream.py), or it
would run ahead of a record on its way to it.

A key_by task asks here which partition a record goes to (Kafka's default partitioner, as the
producer sink would choose) and notes its timestamp; the producer sink reports each batch's
offsets once the broker has acknowledged it; the task manager says how far the worker has
fetched each partition. The worker writes its key_bys' records in time order (scheduler.py),
so the oldest record on its way to a partition is the first one noted for it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.runtime.tasks.arrivals import Arrivals

__all__ = ("InFlightWrites",)

_UNACKNOWLEDGED = -1


class InFlightWrites:
    """Per repartition partition: [timestamp, offset] of each record written and not yet
    fetched, oldest first (offset -1 until the broker acknowledges it)."""

    def __init__(self, partitions: Mapping[str, int]) -> None:
        """`partitions`: each repartition topic's partition count."""
        self._counts = dict(partitions)
        self._pending: dict[TopicPartition, deque[list[int]]] = {}
        self._fetched: dict[TopicPartition, int] = {}
        """The next offset the worker fetches, of each partition it reads (0 for a repartition
        partition it has fetched nothing of yet)."""
        self.arrivals = Arrivals()
        """When the worker fetched what (every partition it reads)."""

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self._counts)

    def write(self, topic: str, key: bytes, timestamp: int) -> int | None:
        """Note a record on its way to `topic`; returns its partition (None: a topic not
        watched here, which the sink partitions)."""
        count = self._counts.get(topic)
        if count is None:
            return None
        partition = partition_for_key(key, count)
        tp = TopicPartition(topic, partition)
        pending = self._pending.get(tp)
        if pending is None:
            pending = self._pending[tp] = deque()
        pending.append([timestamp, _UNACKNOWLEDGED])
        return partition

    def acknowledged(self, topic: str, partition: int, base_offset: int, count: int) -> None:
        """The broker stored the next `count` records written to the partition from
        `base_offset` on (batches to one partition are acknowledged in the order sent)."""
        pending = self._pending.get(TopicPartition(topic, partition))
        if pending is None:
            return
        offset = base_offset
        for entry in pending:
            if count == 0:
                break
            if entry[1] == _UNACKNOWLEDGED:
                entry[1] = offset
                offset += 1
                count -= 1
        tp = TopicPartition(topic, partition)
        if tp not in self._fetched:  # no join here reads it: nothing waits for these
            self.oldest(tp)

    def reading(self, partitions: Iterable[TopicPartition]) -> None:
        """The worker reads these partitions now (any topic): what reaches them is waited for
        until fetched."""
        for tp in partitions:
            if tp.topic in self._counts:
                self._fetched.setdefault(tp, 0)

    def fetched(
        self, tp: TopicPartition, records: Sequence[Any], now_ms: float | None = None
    ) -> None:
        """The worker fetched these records of `tp` (any topic), now (monotonic ms)."""
        self._fetched[tp] = records[-1].offset + 1
        self.arrivals.fetched(tp, records, time.monotonic() * 1000 if now_ms is None else now_ms)

    def fetched_to(self, tp: TopicPartition) -> int | None:
        """The next offset the worker fetches of `tp`, if it reads it."""
        return self._fetched.get(tp)

    def fetch_positions(self) -> dict[TopicPartition, int]:
        """Where the worker's fetching of each partition stands now."""
        return dict(self._fetched)

    def oldest(self, tp: TopicPartition) -> int | None:
        """The timestamp of the oldest record written to `tp` that the worker has not fetched
        yet; None if there is none. What reached a partition the worker does not read is
        forgotten: nothing here waits for it."""
        pending = self._pending.get(tp)
        if not pending:
            return None
        fetched = self._fetched.get(tp)
        while pending and pending[0][1] != _UNACKNOWLEDGED:
            if fetched is not None and pending[0][1] >= fetched:
                break
            pending.popleft()
        return pending[0][0] if pending else None

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """The worker no longer reads these partitions: what has reached them is forgotten,
        and so is what has reached any other partition it does not read."""
        gone = list(partitions)
        self.arrivals.forget(gone)
        for tp in gone:
            self._fetched.pop(tp, None)
        for tp in list(self._pending):
            if tp not in self._fetched:
                self.oldest(tp)
