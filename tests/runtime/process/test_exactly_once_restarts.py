"""When a worker starts over after a failed transaction, and when it stops instead."""

from __future__ import annotations

import pytest
from aiokafka.errors import KafkaConnectionError

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.transactions import TransactionAborted
from streamjoin.runtime.process.exactly_once import run_restarting


class Attempts:
    """Fails with `errors` in turn (committing first where `commits` says so), then ends."""

    def __init__(self, errors: list[Exception], commits: list[bool] | None = None) -> None:
        self.errors, self.commits = errors, commits or [False] * len(errors)
        self.runs = 0
        self.committed = False

    async def __call__(self) -> None:
        self.runs += 1
        if self.runs > len(self.errors):
            return
        self.committed = self.commits[self.runs - 1]
        raise self.errors[self.runs - 1]


async def run(attempts: Attempts, *, exactly_once: bool = True, stopping: bool = False) -> None:
    await run_restarting(
        attempts,
        exactly_once=exactly_once,
        stopping=lambda: stopping,
        committed=lambda: attempts.committed,
    )


async def test_exactly_once_starts_over_after_failed_transactions() -> None:
    attempts = Attempts(
        [TransactionAborted("fenced"), KafkaConnectionError("reset")] * 3, [True] * 6
    )
    await run(attempts)
    assert attempts.runs == 7


async def test_failing_again_and_again_without_a_commit_stops_the_worker() -> None:
    attempts = Attempts([TransactionAborted("refused")] * 5)
    with pytest.raises(TransactionAborted):
        await run(attempts)
    assert attempts.runs == 4


@pytest.mark.parametrize("exactly_once,stopping", [(False, False), (True, True)])
async def test_at_least_once_or_a_stopping_worker_never_starts_over(
    exactly_once: bool, stopping: bool
) -> None:
    attempts = Attempts([TransactionAborted("fenced")])
    with pytest.raises(TransactionAborted):
        await run(attempts, exactly_once=exactly_once, stopping=stopping)
    assert attempts.runs == 1


async def test_what_a_restart_cannot_fix_stops_the_worker() -> None:
    attempts = Attempts([ConfigurationError("the broker no longer has the app's topics")])
    with pytest.raises(ConfigurationError):
        await run(attempts)
    assert attempts.runs == 1
