"""Where a task's output and dead-letter records go: a producer in the worker, a list in tests."""

from __future__ import annotations

from typing import Protocol, final

__all__ = ("OutgoingRecord", "RecordSink")

Headers = list[tuple[str, bytes]]


@final
class OutgoingRecord:
    """One record to produce. A final class with slots: compiled (setup.py), one is built without
    a Python call, which matters once per output record."""

    __slots__ = ("headers", "key", "partition", "timestamp", "topic", "value")

    def __init__(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        *,
        partition: int | None = None,
    ) -> None:
        self.topic = topic
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers
        """A list (aiokafka's batch builder takes no other sequence)."""
        self.partition = partition
        """None: partitioned by key with Kafka's default partitioner."""

    def __repr__(self) -> str:
        return (
            f"OutgoingRecord({self.topic!r}, {self.key!r}, t={self.timestamp}, "
            f"partition={self.partition})"
        )


class RecordSink(Protocol):
    def send(self, record: OutgoingRecord) -> None:
        """Queue `record` for delivery; delivery is confirmed by the commit loop's flush."""
