"""Which record timestamps may move a task's stream time.

Stream time only moves forward, so one record stamped far ahead (a producer with a wrong clock)
would make every later record of its task late and close windows early: dropped records and
wrong non-matches until the state is wiped. A record whose timestamp is negative (none was set)
or further ahead of the wall clock than `max_future_ms` is therefore a bad record: it goes to the
dead-letter topic and never reaches the join.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ("DEFAULT_MAX_FUTURE_MS", "InvalidTimestampError", "timestamp_problem", "wall_clock_ms")

DEFAULT_MAX_FUTURE_MS = 3_600_000
"""One hour: Apache Kafka 4's brokers refuse records further ahead than that by default
(`log.message.timestamp.after.max.ms`), so a record past it was stamped by a broken clock."""


class InvalidTimestampError(ValueError):
    """A record's timestamp cannot be its event time."""


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def timestamp_problem(timestamp: int, now_ms: int, max_future_ms: int) -> InvalidTimestampError:
    """Why `timestamp` is refused (the caller has found it outside [0, now + max_future_ms])."""
    if timestamp < 0:
        return InvalidTimestampError(f"invalid timestamp {timestamp} (the record has none)")
    return InvalidTimestampError(
        f"timestamp {timestamp} ({_when(timestamp)}) is more than max_future_ms={max_future_ms} "
        f"ahead of the wall clock ({_when(now_ms)}); it would move stream time there"
    )


def _when(timestamp_ms: int) -> str:
    try:
        return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat(timespec="seconds")
    except (OverflowError, ValueError, OSError):
        return "beyond the calendar"
