"""When the worker's loop commits, and when it flushes its state between two commits.

A flush sends the changelog writes of the running tasks (state/changelog_writer.py batches them
only then, so writes that expire first are never logged), waits for the broker to take them and
applies them to RocksDB. Flushed only by the commit, five seconds of live traffic came out as
tens of thousands of changelog records at once: the event loop stalled for tenths of a second
while they were batched and applied, and the outputs waited behind them in the producer both
share, a latency bump at every commit (issue 40, item 5). So on live traffic, its inputs read
to within `LIVE_LAG` records of their ends, the loop also flushes every `FLUSH_INTERVAL_S`
between commits, leaving each flush and the commit little to do, whatever the commit interval.
Not in a backlog: there most writes expire before the commit and are never logged, which is
worth more than a smooth tail.
"""

from __future__ import annotations

from typing import Protocol

from streamjoin.assignment.model import TopicPartition

__all__ = ("FLUSH_INTERVAL_S", "LIVE_LAG", "CommitPacer")

FLUSH_INTERVAL_S = 0.5
LIVE_LAG = 1_000
"""Records an input partition may be behind its end for its traffic to count as live."""


class Lagging(Protocol):
    """The worker's consumer, as far as pacing reads it."""

    def assignment(self) -> frozenset[TopicPartition]: ...

    def lag(self, tp: TopicPartition) -> int | None: ...


class CommitPacer:
    """Decides, on each turn of the loop, whether a commit or a flush is due (monotonic time)."""

    def __init__(self, interval_s: float, now: float) -> None:
        self._interval = interval_s
        self._next_commit = now + interval_s
        self._next_flush = now + FLUSH_INTERVAL_S

    def commit_due(self, now: float) -> bool:
        return now >= self._next_commit

    def committed(self, now: float) -> None:
        """A commit started (it flushes too)."""
        self._next_commit = now + self._interval
        self._next_flush = now + FLUSH_INTERVAL_S

    def flush_due(self, now: float, consumer: Lagging) -> bool:
        """Whether to flush now: its time has come and no input partition the consumer owns is
        known to be more than `LIVE_LAG` behind (one nothing was read from yet says nothing)."""
        if now < self._next_flush:
            return False
        self._next_flush = now + FLUSH_INTERVAL_S
        lags = [consumer.lag(tp) for tp in consumer.assignment()]
        return all(lag is None or lag <= LIVE_LAG for lag in lags)
