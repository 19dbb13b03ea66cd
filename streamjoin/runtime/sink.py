"""Where a task's output and dead-letter records go: a producer in the worker, a list in tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ("OutgoingRecord", "RecordSink")

Headers = list[tuple[str, bytes]]


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers = field(default_factory=list)
    partition: int | None = None
    """None: partitioned by key with Kafka's default partitioner."""


class RecordSink(Protocol):
    def send(self, record: OutgoingRecord) -> None:
        """Queue `record` for delivery; delivery is confirmed by the commit loop's flush."""
