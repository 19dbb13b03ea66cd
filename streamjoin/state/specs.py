"""What the runtime declares about a task's state: its stores and the partition they follow."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from streamjoin.errors import ConfigurationError

__all__ = (
    "DEFAULT_MIN_SEGMENT_INTERVAL_MS",
    "StoreKind",
    "StoreSpec",
    "TaskSpec",
    "check_name",
)

DEFAULT_MIN_SEGMENT_INTERVAL_MS = 60_000
"""Default lower bound of a window store's segment interval (as Kafka Streams)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_name(what: str, name: str) -> str:
    """Refuse names that are unsafe as one path component or in a topic name."""
    if not _NAME.fullmatch(name) or len(name) > 200:
        raise ConfigurationError(
            f"invalid {what} name {name!r}: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit, at most 200 characters)"
        )
    return name


class StoreKind(enum.Enum):
    KEY_VALUE = "kv"
    """Latest value per key; changelog compacted."""
    WINDOW = "window"
    """Records by key and timestamp, duplicates kept, dropped after the retention period."""
    VERSIONED = "versioned"
    """Every value of a key with the time it became valid, for `retention_ms` of history."""


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """One named store of a task. Build with `StoreSpec.kv(...)` or `StoreSpec.window(...)`."""

    name: str
    kind: StoreKind
    retention_ms: int = 0
    """Window stores: records with timestamp <= stream time - retention are dropped.
    Versioned stores: the history kept behind the latest timestamp written."""
    segment_interval_ms: int = 0
    """Window stores: expired data is deleted in whole segments of this many milliseconds."""
    source_topic: str | None = None
    """Key-value stores of a table: the table's own (compacted) topic, which is the store's
    changelog (Kafka Streams' source-topic reuse): the store restores from it and writes
    nothing; its position is the offset after the last source record it holds."""

    def __post_init__(self) -> None:
        check_name("store", self.name)
        if self.kind is StoreKind.VERSIONED and self.retention_ms <= 0:
            raise ConfigurationError(
                f"versioned store {self.name!r}: history must be positive, got {self.retention_ms}"
            )
        if self.kind is StoreKind.WINDOW:
            if self.retention_ms <= 0:
                raise ConfigurationError(
                    f"window store {self.name!r}: retention_ms must be positive, "
                    f"got {self.retention_ms}"
                )
            if self.segment_interval_ms <= 0:
                raise ConfigurationError(
                    f"window store {self.name!r}: segment_interval_ms must be positive, "
                    f"got {self.segment_interval_ms}"
                )

    @classmethod
    def kv(cls, name: str, *, source_topic: str | None = None) -> StoreSpec:
        return cls(name, StoreKind.KEY_VALUE, source_topic=source_topic)

    @classmethod
    def versioned(cls, name: str, *, history_ms: int, source_topic: str | None = None) -> StoreSpec:
        return cls(name, StoreKind.VERSIONED, history_ms, source_topic=source_topic)

    @classmethod
    def window(
        cls,
        name: str,
        *,
        retention_ms: int,
        segment_interval_ms: int | None = None,
    ) -> StoreSpec:
        """A window store; the segment interval defaults to max(retention / 2, 60 s)."""
        interval = (
            segment_interval_ms
            if segment_interval_ms is not None
            else max(retention_ms // 2, DEFAULT_MIN_SEGMENT_INTERVAL_MS)
        )
        return cls(name, StoreKind.WINDOW, retention_ms, interval)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A task's state: `task_id` names its directory, `partition` its changelog partitions.

    `partition_count` is the partition count of the task's input topics, which every changelog
    of its stores must have.
    """

    task_id: str
    partition: int
    partition_count: int
    stores: tuple[StoreSpec, ...]

    def __post_init__(self) -> None:
        check_name("task", self.task_id)
        if not 0 <= self.partition < self.partition_count:
            raise ConfigurationError(
                f"task {self.task_id!r}: partition {self.partition} is not within "
                f"0..{self.partition_count - 1} (partition_count={self.partition_count})"
            )
        names = [store.name for store in self.stores]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ConfigurationError(
                f"task {self.task_id!r}: store names repeat: {', '.join(duplicates)}"
            )
