"""A stand-in for the producer behind store changelogs when there is no broker (test driver).

Records are kept in memory per topic and partition, so tests can look at what a store would
have written to its changelog.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

__all__ = ("ChangelogRecord", "MemoryChangelogProducer")


@dataclass(frozen=True, slots=True)
class ChangelogRecord:
    key: bytes
    value: bytes | None
    timestamp: int


class _Batch:
    """Never full, so a ChangelogWriter appends to it until its owner seals it."""

    def __init__(self, sink: list[ChangelogRecord]) -> None:
        self._sink = sink

    def append(self, *, key: bytes, value: bytes | None, timestamp: int) -> bool:
        self._sink.append(ChangelogRecord(key, value, timestamp))
        return True


class MemoryChangelogProducer:
    """Implements the part of a producer ChangelogWriter uses; one per topic-partition."""

    def __init__(self) -> None:
        self.records: defaultdict[tuple[str, int], list[ChangelogRecord]] = defaultdict(list)
        self._current: list[ChangelogRecord] = []

    def for_partition(self, topic: str, partition: int) -> MemoryChangelogProducer:
        producer = MemoryChangelogProducer()
        producer.records = self.records
        producer._current = self.records[(topic, partition)]
        return producer

    def create_batch(self) -> _Batch:
        return _Batch(self._current)
