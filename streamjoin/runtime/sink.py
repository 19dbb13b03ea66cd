"""Where a task's output and dead-letter records go: a producer in the worker, a list in tests."""

from __future__ import annotations

from typing import NamedTuple, Protocol

__all__ = ("OutgoingRecord", "RecordSink")

Headers = list[tuple[str, bytes]]


class OutgoingRecord(NamedTuple):
    """A named tuple: one is made per output record, and a tuple is built fastest."""

    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers
    """A list (aiokafka's batch builder takes no other sequence)."""
    partition: int | None = None
    """None: partitioned by key with Kafka's default partitioner."""


class RecordSink(Protocol):
    def send(self, record: OutgoingRecord) -> None:
        """Queue `record` for delivery; delivery is confirmed by the commit loop's flush."""
