"""Late records said out loud (issue 35 item 2): the first late record of a join's task logs one
warning saying how late it was, the grace, and what to change; after that, one line a minute
sums up the late records of the task while they go on. The counts stay in the join counters
(metrics `join_late_joined_total` and `join_late_no_partner_total`, and the worker's stop
summary). A late record joins only what the other side's store still holds (Kafka Streams'
semantics): partners further back are missed.

`late_records` is the one place that knows which join counters count late records.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters

__all__ = ("SUMMARY_EVERY_S", "LatenessReport", "late_records", "moment")

logger = logging.getLogger(__name__)

SUMMARY_EVERY_S = 60.0


def late_records(counters: JoinCounters) -> int:
    """Records the join took as late."""
    return counters.late


def _duration(ms: float) -> str:
    if ms < 1_000:
        return f"{ms:.0f} ms"
    if ms < 120_000:
        return f"{ms / 1000:.1f} s"
    if ms < 7_200_000:
        return f"{ms / 60_000:.1f} min"
    return f"{ms / 3_600_000:.1f} h"


def moment(ms: int) -> str:
    """An epoch-ms timestamp as ISO 8601 UTC."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


class LatenessReport:
    """The late records of one join task, told as they come."""

    def __init__(self, spec: JoinSpec, task: str, rekeyed: dict[int, str] | None = None) -> None:
        """`task`: the task's id; `rekeyed`: for a side read through a key_by, the topic the
        key_by reads (by side index)."""
        self._spec = spec
        self._task = task
        self._rekeyed = rekeyed or {}
        self.told = False
        self._pending = 0
        self._total = 0
        self._latest_behind_ms: float | None = None
        self._summed_at = 0.0

    def late(self, side: int, timestamp: int, stream_time: int | None) -> None:
        """A record of `side` stamped `timestamp` was late (the task stood at `stream_time`)."""
        self._total += 1
        behind = None if stream_time is None else float(stream_time - timestamp)
        if not self.told:
            self.told = True
            self._summed_at = time.monotonic()
            self._warn_first(side, timestamp, behind)
            return
        self._pending += 1
        self._latest_behind_ms = behind
        self.tick()

    def tick(self) -> None:
        """Sum up the late records since the last line, if a minute has passed."""
        if not self._pending or time.monotonic() - self._summed_at < SUMMARY_EVERY_S:
            return
        self._summed_at = time.monotonic()
        behind = self._latest_behind_ms
        logger.warning(
            "join %s, task %s: %d more late records in the last %.0f s%s; %d in all",
            self._spec.name,
            self._task,
            self._pending,
            SUMMARY_EVERY_S,
            "" if behind is None else f" (the latest {_duration(behind)} behind)",
            self._total,
        )
        self._pending = 0

    def _warn_first(self, side: int, timestamp: int, behind: float | None) -> None:
        spec = self._spec
        topic = spec.input_topics[side]
        via = self._rekeyed.get(side)
        source = f"{via} (re-keyed through {topic})" if via else topic
        window = spec.window
        grace = "no grace" if window is None else f"a grace of {_duration(window.grace_ms)}"
        how_late = "" if behind is None else f", {_duration(behind)} behind the task's stream time"
        logger.warning(
            "join %s, task %s: a record of %s stamped %s came late%s (the join has %s): it joins "
            "only what the other side's store still holds, older partners are missed. One input "
            "ran ahead of the other: give the join a grace that covers the gap "
            "(JoinWindows(grace=...)), or start the workers with --max-task-idle-ms long enough "
            "for the slower input to arrive, or load both inputs together, in time order. "
            "Further late records of this task are summed up once a minute",
            spec.name,
            self._task,
            source,
            moment(timestamp),
            how_late,
            grace,
        )
