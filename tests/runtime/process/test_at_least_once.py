"""The at-least-once commit's sequence and what it says when the group coordinator refuses it.

The worker's parts are stood in for by small objects here: the sequence is pure ordering, and the
e2e tests (test_revoke_commit.py, test_revoke_delivery.py) run it on a real broker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from dataclasses import dataclass, field

import pytest
from aiokafka import TopicPartition

from streamjoin.group.errors import CommitFailedError
from streamjoin.runtime.process.at_least_once import commit_tasks
from streamjoin.runtime.topology.app_topology import TaskId

CLICKS_0, CLICKS_1 = TopicPartition("clicks", 0), TopicPartition("clicks", 1)
REFUSED = CommitFailedError("REBALANCE_IN_PROGRESS", 27, retriable=True)


@dataclass
class Steps:
    taken: list[str] = field(default_factory=list)


@dataclass
class Manager:
    steps: Steps
    owned: set[TopicPartition]
    at: dict[TopicPartition, int]

    def positions(self, tasks: Collection[TaskId] | None = None) -> dict[TopicPartition, int]:
        self.steps.taken.append("positions")
        chosen = None if tasks is None else {t.partition for t in tasks}
        return {tp: o for tp, o in self.at.items() if chosen is None or tp.partition in chosen}

    def still_owned(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        return {tp: o for tp, o in offsets.items() if tp in self.owned}


@dataclass
class State:
    steps: Steps

    async def commit(self, task_ids: Collection[str] | None = None) -> None:
        self.steps.taken.append(f"state of {sorted(task_ids) if task_ids else 'every task'}")


@dataclass
class Consumer:
    steps: Steps
    refuse: bool
    committed: list[dict[TopicPartition, int]] = field(default_factory=list)

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.steps.taken.append("offsets")
        if self.refuse:
            raise REFUSED
        self.committed.append(offsets)


@dataclass
class Worker:
    """What commit_tasks uses of a worker: the sink, global tables and purger are itself."""

    steps: Steps
    manager: Manager
    state: State
    consumer: Consumer
    commits_refused: bool = False
    last_commit_ms: int | None = None
    watch: None = None

    def __post_init__(self) -> None:
        self.sink = self.global_tables = self.purger = self

    async def flush(self) -> None:
        await asyncio.sleep(0)
        self.steps.taken.append("outputs delivered")

    def checkpoint(self) -> None:
        self.steps.taken.append("global tables checkpointed")

    def after_commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.steps.taken.append("purged")


def _worker(*, refuse: bool = False, owned: set[TopicPartition] | None = None) -> Worker:
    steps = Steps()
    at = {CLICKS_0: 5, CLICKS_1: 9}
    manager = Manager(steps, set(at) if owned is None else owned, at)
    return Worker(steps, manager, State(steps), Consumer(steps, refuse))


async def test_a_periodic_commit_takes_positions_first_and_commits_what_it_still_owns() -> None:
    worker = _worker(owned={CLICKS_1})  # clicks-0 revoked (and committed by its revocation)
    await commit_tasks(worker)  # type: ignore[arg-type]
    assert worker.steps.taken == [
        "positions",
        "outputs delivered",
        "state of every task",
        "global tables checkpointed",
        "offsets",
        "purged",
    ]
    assert worker.consumer.committed == [{CLICKS_1: 9}]
    assert worker.last_commit_ms is not None


async def test_a_revocation_commits_its_tasks_alone() -> None:
    worker = _worker()
    await commit_tasks(worker, frozenset({TaskId("clicks", 0)}))  # type: ignore[arg-type]
    assert worker.steps.taken == [
        "positions",
        "outputs delivered",
        "state of ['clicks_0']",
        "offsets",
        "purged",
    ]
    assert worker.consumer.committed == [{CLICKS_0: 5}]


async def test_a_refused_revocation_commit_says_the_next_owner_repeats_the_records(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No later commit of this worker carries a revoked partition's offsets: saying "the next
    commit carries them" (as it did) was wrong."""
    caplog.set_level(logging.INFO)
    worker = _worker(refuse=True)
    await commit_tasks(worker, frozenset({TaskId("clicks", 0)}))  # type: ignore[arg-type]
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("streamjoin")]
    assert said == [
        (
            logging.WARNING,
            "the revoked partitions' offsets were not committed (their next owner repeats what "
            "was processed since the last commit): REBALANCE_IN_PROGRESS",
        )
    ]
    assert worker.last_commit_ms is None


async def test_a_refused_periodic_commit_is_retried_by_the_next_and_said_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    worker = _worker(refuse=True)
    await commit_tasks(worker)  # type: ignore[arg-type]
    [said] = [r for r in caplog.records if r.name.startswith("streamjoin")]
    assert (said.levelno, said.getMessage()) == (
        logging.INFO,
        "offsets not committed yet (the next commit carries them): REBALANCE_IN_PROGRESS",
    )
