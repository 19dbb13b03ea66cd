"""What a join processor counts, for metrics and the worker's summary."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("JoinCounters",)


@dataclass(slots=True)
class JoinCounters:
    matched: int = 0
    """Joined pairs emitted."""
    unmatched: int = 0
    """Left/outer non-matches emitted."""
    late_dropped: int = 0
    """Records that arrived after their window plus grace had closed."""
    skipped: int = 0
    """Records a join cannot use: null value, or null key on a side whose non-matches are not
    emitted (as Kafka Streams)."""
    no_match_dropped: int = 0
    """Stream records of an inner global-table join that found no table value."""
    retracted: int = 0
    """Table-table joins: tombstones emitted for results that stopped existing."""
    too_old: int = 0
    """Joins with a versioned table: stream records older than the table's history."""
    stale: int = 0
    """Foreign-key joins: responses discarded because the left value changed since."""

    def add(self, other: JoinCounters) -> None:
        self.matched += other.matched
        self.unmatched += other.unmatched
        self.late_dropped += other.late_dropped
        self.skipped += other.skipped
        self.no_match_dropped += other.no_match_dropped
        self.retracted += other.retracted
        self.too_old += other.too_old
        self.stale += other.stale
