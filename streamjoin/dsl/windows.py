"""Join windows with Kafka Streams' semantics (JoinWindows since 3.0, explicit grace)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from streamjoin.errors import ConfigurationError

__all__ = ("Duration", "JoinWindows", "to_millis")

Duration = int | timedelta
"""Milliseconds as an int, or a timedelta."""


def to_millis(value: Duration, what: str) -> int:
    """A non-negative duration in whole milliseconds."""
    millis = int(value.total_seconds() * 1000) if isinstance(value, timedelta) else value
    if isinstance(millis, bool) or not isinstance(millis, int):
        raise ConfigurationError(f"{what} must be milliseconds (int) or a timedelta, got {value!r}")
    if millis < 0:
        raise ConfigurationError(f"{what} must not be negative, got {millis} ms")
    return millis


@dataclass(frozen=True, slots=True, init=False)
class JoinWindows:
    """Which records of the two sides join: keys equal and the right record's timestamp within
    [left.ts - before, left.ts + after]. `grace` is how long after a window ends out-of-order
    records are still accepted; left/outer non-matches are emitted only once it has passed.
    """

    before_ms: int
    after_ms: int
    grace_ms: int

    def __init__(self, *, before: Duration, after: Duration, grace: Duration = 0) -> None:
        object.__setattr__(self, "before_ms", to_millis(before, "JoinWindows before"))
        object.__setattr__(self, "after_ms", to_millis(after, "JoinWindows after"))
        object.__setattr__(self, "grace_ms", to_millis(grace, "JoinWindows grace"))
        if self.retention_ms == 0:
            raise ConfigurationError(
                "JoinWindows(before=0, after=0, grace=0) would join nothing: each side's store "
                "keeps a record for before + after + grace ms (as Kafka Streams' join stores); "
                "give grace=1 or more to join records with equal timestamps"
            )

    @classmethod
    def of(cls, time_difference: Duration, grace: Duration = 0) -> JoinWindows:
        """A symmetric window: the other side's record at most `time_difference` away."""
        return cls(before=time_difference, after=time_difference, grace=grace)

    @property
    def retention_ms(self) -> int:
        """How long each side's store keeps a record behind its side's stream time (as Kafka
        Streams' join stores)."""
        return self.before_ms + self.after_ms + self.grace_ms

    def reach_ms(self, left_side: bool) -> tuple[int, int]:
        """(before, after) as seen from a record of the left or the right side."""
        return (self.before_ms, self.after_ms) if left_side else (self.after_ms, self.before_ms)
