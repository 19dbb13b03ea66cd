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
    late_joined: int = 0
    """Stream-stream joins: late records (their window plus grace had closed: t + after + grace
    < stream time, from the right side t + before + grace) that joined partners the other
    side's window store still held. Late records are never dropped, as in Kafka Streams."""
    late_no_partner: int = 0
    """Stream-stream joins: late records that found no partner when they arrived (a left/outer
    side emits each as a non-match once nothing can match it any more)."""
    skipped: int = 0
    """Records a join cannot use: null value, or null key on a side whose non-matches are not
    emitted (as Kafka Streams)."""
    no_match_dropped: int = 0
    """Stream records of an inner global-table join that found no table value."""
    retracted: int = 0
    """Table-table and foreign-key joins: tombstones emitted."""
    too_old: int = 0
    """Joins with a versioned table: stream records older than the table's history (they join
    only the key's latest version, if it was valid at their time)."""
    too_old_updates: int = 0
    """Versioned tables: table updates older than the history, dropped (as Kafka Streams)."""
    stale: int = 0
    """Foreign-key joins: responses discarded because the left value changed since."""

    @property
    def late(self) -> int:
        """Late records of a stream-stream join, joined or not."""
        return self.late_joined + self.late_no_partner

    def add(self, other: JoinCounters) -> None:
        self.matched += other.matched
        self.unmatched += other.unmatched
        self.late_joined += other.late_joined
        self.late_no_partner += other.late_no_partner
        self.skipped += other.skipped
        self.no_match_dropped += other.no_match_dropped
        self.retracted += other.retracted
        self.too_old += other.too_old
        self.too_old_updates += other.too_old_updates
        self.stale += other.stale
