"""A commit step that waits says so while it waits, and is cancelled with the commit; refused
commits are said once offsets went uncommitted too long."""

from __future__ import annotations

import asyncio
import logging

import pytest

from streamjoin.group.errors import CommitFailedError
from streamjoin.runtime.process.slow_commit import report_refused, waited


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.endswith("slow_commit")]


async def test_a_step_that_waits_is_named_until_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    answered = asyncio.Event()

    async def coordinator() -> str:
        await answered.wait()
        return "committed"

    said_twice = asyncio.Event()  # said again while it still waits, then answered

    class Listener(logging.Handler):
        said = 0

        def emit(self, record: logging.LogRecord) -> None:
            self.said += 1
            if self.said == 2:
                said_twice.set()

    listener = Listener()
    logging.getLogger("streamjoin.runtime.process.slow_commit").addHandler(listener)
    try:
        commit = asyncio.create_task(waited(coordinator(), "the group coordinator", 0.01))
        await said_twice.wait()
    finally:
        logging.getLogger("streamjoin.runtime.process.slow_commit").removeHandler(listener)
    answered.set()
    assert await commit == "committed"
    said = _warnings(caplog)[0]
    assert said.startswith("the commit has waited 0 s for the group coordinator; input offsets")
    assert "check the broker's health" in said


async def test_a_quick_step_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert await waited(asyncio.sleep(0, "done"), "the outputs to be delivered", 5) == "done"
    assert _warnings(caplog) == []


async def test_cancelling_the_commit_cancels_its_step() -> None:
    step = asyncio.ensure_future(asyncio.Event().wait())
    commit = asyncio.create_task(waited(step, "the changelog writes and checkpoints", 5))
    await asyncio.sleep(0)
    commit.cancel()
    with pytest.raises(asyncio.CancelledError):
        await commit
    assert step.cancelled()


async def test_a_failing_step_raises_its_own_error() -> None:
    async def refused() -> None:
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError, match="refused"):
        await waited(refused(), "the group coordinator", 5)


def test_refused_commits_are_said_once_offsets_went_uncommitted_too_long(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    refused = CommitFailedError("REBALANCE_IN_PROGRESS", 27, retriable=True)

    def refused_at(last_commit_ms: int | None, now_ms: int, *, broker_lost: bool = False) -> None:
        report_refused(
            refused,
            retried=True,
            broker_lost=broker_lost,
            last_commit_ms=last_commit_ms,
            now_ms=now_ms,
        )

    refused_at(100_000, 100_000 + 29_000)  # the next commit may go through
    refused_at(None, 200_000)  # none went through yet: no measure
    refused_at(100_000, 100_000 + 31_000, broker_lost=True)  # the broker watch said so
    assert _warnings(caplog) == []
    refused_at(100_000, 100_000 + 31_000)
    [said] = _warnings(caplog)
    assert said.startswith("input offsets have not been committed for 31 s, every commit since")
    assert "(last: REBALANCE_IN_PROGRESS)" in said


def test_a_refusal_no_commit_retries_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    fenced = CommitFailedError("UNKNOWN_MEMBER_ID", 25, retriable=False)
    report_refused(fenced, retried=True, broker_lost=True, last_commit_ms=None, now_ms=0)
    assert _warnings(caplog) == [
        "offsets not committed (they will be reprocessed): UNKNOWN_MEMBER_ID"
    ]
