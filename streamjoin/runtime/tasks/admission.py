"""Which fetched records may enter a task at all; the others are bad records, refused before
they take a place in the timestamp order.

- A timestamp must be an event time: stream time only moves forward, so one record stamped far
  ahead (a producer with a wrong clock) would make every later record of its task late and close
  windows early, until the state is wiped. Negative (none set) or further ahead of the wall
  clock than `max_future_ms` is refused.
- A record must fit where it has to go: a value over `max_record_bytes` could not be written to
  the store's changelog (nor to an output), so the broker would refuse it and stop the worker.
- A record without a key joins nothing: it is refused unless its side emits non-matches (the
  left side of a left or outer join, the right of an outer one: Kafka Streams' KIP-962). A
  global-table join refuses it too: its output keeps the stream record's key.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Final

from streamjoin.dsl.spec import JoinSpec

__all__ = (
    "Admission",
    "InvalidTimestampError",
    "KeylessRecordError",
    "RecordTooLargeError",
    "wall_clock_ms",
)


class InvalidTimestampError(ValueError):
    """A record's timestamp cannot be its event time."""


class RecordTooLargeError(ValueError):
    """A record too large to be stored in a changelog or written to an output."""


class KeylessRecordError(ValueError):
    """A record without a key on a side that cannot emit it unjoined."""


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _when(timestamp_ms: int) -> str:
    try:
        return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat(timespec="seconds")
    except (OverflowError, ValueError, OSError):
        return "beyond the calendar"


def record_size(record: Any) -> int:
    key, value = record.key, record.value
    return (0 if key is None else len(key)) + (0 if value is None else len(value))


class Admission:
    """The checks of one join's task, per side (0: left, 1: right)."""

    def __init__(self, spec: JoinSpec, *, max_future_ms: int, max_record_bytes: int) -> None:
        self.max_future_ms: Final = max_future_ms
        self.max_record_bytes: Final = max_record_bytes
        stream_stream = not spec.is_stream_table and not spec.emits_table and not spec.is_global
        self._keyless_joins: Final = (
            spec.how in ("left", "outer") and not spec.emits_table and not spec.is_global,
            spec.how == "outer" and stream_stream,
        )

    def problem(self, side: int, record: Any, now_ms: int) -> ValueError | None:
        """Why `record` (fetched for `side`) is refused, or None."""
        t: int = record.timestamp
        if t < 0:
            return InvalidTimestampError(f"invalid timestamp {t} (the record has none)")
        if t > now_ms + self.max_future_ms:
            return InvalidTimestampError(
                f"timestamp {t} ({_when(t)}) is more than max_future_ms={self.max_future_ms} "
                f"ahead of the wall clock ({_when(now_ms)}); it would move stream time there"
            )
        if record.key is None and not self._keyless_joins[side]:
            return KeylessRecordError("the record has no key, so it cannot join anything")
        size = record_size(record)
        if size > self.max_record_bytes:
            return RecordTooLargeError(
                f"key and value take {size} bytes, more than max_record_bytes="
                f"{self.max_record_bytes}: it could not be stored in a changelog"
            )
        return None
