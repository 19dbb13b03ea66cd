"""The commit at a revocation (issue 40, item 2), on a real broker with the worker in this process:
it commits the leaving task alone, without waiting for a periodic commit of another task that
is in flight, and that periodic commit, finishing later, does not put the leaving task's older
offsets back over the revocation's.

The periodic commit is held where it checkpoints the task that stays (a slow disk, say), after it
has taken every task's positions and before it commits them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import harness
import pytest
from aiokafka import TopicPartition
from test_revoke_delivery import committed_offsets

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.phases import TaskPhase

pytestmark = [pytest.mark.broker]

PAIRS = 40


class HeldCheckpoint:
    """Holds a task's checkpoint (the periodic commit's) until released."""

    def __init__(self, task: Any) -> None:
        self.entered = asyncio.Event()
        self.released = asyncio.Event()
        self.calls = 0
        self._checkpoint = task.checkpoint_off_loop
        task.checkpoint_off_loop = self._held

    async def _held(self) -> None:
        self.calls += 1
        self.entered.set()
        await self.released.wait()
        await self._checkpoint()


async def two_running_tasks(
    bs: str, unique: str, running: harness.Running
) -> tuple[TaskId, TaskId, set[TopicPartition]]:
    """Start the worker, give both its tasks state and wait until they processed it all;
    returns the task to revoke, the one that stays, and the revoked task's partitions."""
    await ensure_topics(
        bs, [TopicSpec(f"{t}-{unique}", harness.PARTITIONS) for t in ("imp", "clk", "out")]
    )
    await running.start()
    manager = running.worker.manager
    assert manager is not None
    await harness.until(lambda: len(running.running_tasks()) == 2, 60, "both tasks running")
    leaving, staying = sorted(running.running_tasks())
    await harness.send(bs, f"imp-{unique}", range(PAIRS))
    await harness.send(bs, f"clk-{unique}", range(PAIRS), ts0=harness.EVENT_T0 + 100_000)
    ends = {
        TopicPartition(f"{t}-{unique}", p): PAIRS // 2
        for t in ("imp", "clk")
        for p in range(harness.PARTITIONS)
    }
    await harness.until(lambda: manager.positions() == ends, 60, "the records processed")
    mine = {TopicPartition(f"{t}-{unique}", leaving.partition) for t in ("imp", "clk")}
    return leaving, staying, mine


async def test_a_revocation_leaves_the_state_of_the_tasks_that_stay_alone(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    # No periodic commit in this test's time.
    running = harness.Running(
        harness.make_app(unique), broker.bootstrap, tmp_path / "w1", commit_interval_s=600
    )
    async with harness.workers(running):
        leaving, staying, mine = await two_running_tasks(broker.bootstrap, unique, running)
        manager, state = running.worker.manager, running.worker.state
        assert manager is not None
        held = HeldCheckpoint(state.task(str(staying)))
        held.released.set()
        expected = manager.positions([leaving])
        await asyncio.wait_for(manager.on_revoked(frozenset(mine)), 60)
        assert held.calls == 0, "the revocation checkpointed the task that stays"
        offsets = await committed_offsets(broker.bootstrap, running.worker.app.app_id)
        assert {tp: offsets.get((tp.topic, tp.partition)) for tp in expected} == expected
        assert all((tp.topic, tp.partition) not in offsets for tp in manager.positions([staying]))


async def test_a_revocation_commits_its_task_alone_beside_a_periodic_commit_in_flight(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    running = harness.Running(harness.make_app(unique), bs, tmp_path / "w1", commit_interval_s=1)
    async with harness.workers(running):
        leaving, staying, mine = await two_running_tasks(bs, unique, running)
        worker = running.worker
        manager, consumer, state = worker.manager, worker.consumer, worker.state
        assert manager is not None

        commits: list[dict[Any, int]] = []
        committing = consumer.commit

        async def commit(offsets: Any = None) -> None:
            commits.append(dict(offsets))
            await committing(offsets)

        consumer.commit = commit  # type: ignore[method-assign]
        held = HeldCheckpoint(state.task(str(staying)))
        try:
            # A periodic commit takes every position, then waits on the staying task.
            await asyncio.wait_for(held.entered.wait(), 60)
            before = len(commits)
            # The leaving task goes on meanwhile: later positions than the held commit's.
            more = range(PAIRS, 2 * PAIRS)
            leaving_only = [a for a in more if a % harness.PARTITIONS == leaving.partition]
            await harness.send(bs, f"imp-{unique}", range(leaving_only[0], more.stop, 2))
            position = {TopicPartition(f"imp-{unique}", leaving.partition): PAIRS}
            await harness.until(
                lambda: position.items() <= manager.positions([leaving]).items(),
                60,
                "the leaving task processed its later records",
            )
            expected = manager.positions([leaving])

            revoking = asyncio.create_task(manager.on_revoked(frozenset(mine)))
            done, _ = await asyncio.wait({revoking}, timeout=60)
            assert done, "the revocation waited for the periodic commit of the other task"
            revoking.result()
            assert commits[before:] == [expected], "the revocation commits its own task alone"
            assert held.calls == 1, "the revocation checkpointed the task that stays"
            leaving_state = state.task(str(leaving))
            assert leaving_state is not None and leaving_state.phase is TaskPhase.SUSPENDED
        finally:
            held.released.set()

        # The held commit finishes: it commits the staying task, not the leaving one's past.
        await harness.until(lambda: len(commits) > before + 1, 60, "the held commit finished")
        later = [set(c) & mine for c in commits[before + 1 :]]
        assert not any(later), f"a later commit named revoked partitions: {later}"
        offsets = await committed_offsets(bs, worker.app.app_id)
        assert {tp: offsets[tp.topic, tp.partition] for tp in expected} == expected
