"""When the worker's loop flushes its state between commits (runtime/process/pacing.py): on
live traffic only, every FLUSH_INTERVAL_S."""

from __future__ import annotations

from aiokafka import TopicPartition

from streamjoin.runtime.process.pacing import FLUSH_INTERVAL_S, LIVE_LAG, CommitPacer

INTERVAL = 5.0
STEP = FLUSH_INTERVAL_S


class Consumer:
    def __init__(self, **lags: int | None) -> None:
        self.lags = {TopicPartition(t, 0): lag for t, lag in lags.items()}

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self.lags)

    def lag(self, tp: TopicPartition) -> int | None:
        return self.lags[tp]


def test_live_inputs_are_flushed_between_commits_at_the_pace() -> None:
    pacer = CommitPacer(INTERVAL, now=0.0)
    live = Consumer(imp=0, clk=LIVE_LAG)
    assert not pacer.flush_due(STEP / 2, live)
    assert pacer.flush_due(STEP, live)
    assert not pacer.flush_due(STEP * 1.5, live), "once per step"
    assert pacer.flush_due(STEP * 2, live)
    assert not pacer.commit_due(INTERVAL - 0.01)
    assert pacer.commit_due(INTERVAL)


def test_a_backlog_is_not_flushed_between_commits() -> None:
    pacer = CommitPacer(INTERVAL, now=0.0)
    assert not pacer.flush_due(STEP, Consumer(imp=0, clk=LIVE_LAG + 1))
    assert not pacer.flush_due(STEP * 2, Consumer(imp=None, clk=LIVE_LAG + 1))
    assert pacer.flush_due(STEP * 3, Consumer(imp=0, clk=0))


def test_a_partition_nothing_was_read_from_says_nothing() -> None:
    """An input that is empty so far (the clicks before the first click) has no known lag."""
    pacer = CommitPacer(INTERVAL, now=0.0)
    assert pacer.flush_due(STEP, Consumer(imp=3, clk=None))


def test_a_commit_puts_the_next_flush_a_step_later() -> None:
    pacer = CommitPacer(INTERVAL, now=0.0)
    pacer.committed(INTERVAL)
    live = Consumer(imp=0)
    assert not pacer.flush_due(INTERVAL + STEP / 2, live)
    assert pacer.flush_due(INTERVAL + STEP, live)
    assert not pacer.commit_due(INTERVAL * 2 - 0.01)
    assert pacer.commit_due(INTERVAL * 2)
