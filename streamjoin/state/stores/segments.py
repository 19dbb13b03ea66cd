"""Window time arithmetic: which records are live, which segments may go, what a fetch reads.

A record is expired once its timestamp is at or below `stream time - retention`, stream time
being the largest timestamp the store has seen. Segment `s` holds timestamps in
[s * interval, (s + 1) * interval); it is deleted once all of them are expired.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("Segments",)


@dataclass(frozen=True, slots=True)
class Segments:
    retention_ms: int
    interval_ms: int

    def segment_of(self, timestamp: int) -> int:
        return timestamp // self.interval_ms

    def is_expired(self, timestamp: int, stream_time: int) -> bool:
        return timestamp <= stream_time - self.retention_ms

    def first_live_segment(self, stream_time: int) -> int:
        """The oldest segment that can still hold a live record; older ones may be deleted."""
        return (stream_time - self.retention_ms + 1) // self.interval_ms

    def live_bounds(self, t_from: int, t_to: int, stream_time: int) -> tuple[int, int] | None:
        """[t_from, t_to] clipped to what can hold live records, or None if nothing can."""
        low = max(t_from, stream_time - self.retention_ms + 1)
        high = min(t_to, stream_time)
        return (low, high) if low <= high else None
