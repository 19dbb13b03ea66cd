"""Tasks assigned to a worker open after its rebalance callback has returned: the callback
registers them and pauses their inputs, and their stores open in the background, one task at a
time. A worker given hundreds of tasks held its callback for as long as opening them took (91 s
for 512), and the group's next rebalance waited on it; so did a task whose state directory
another process of the host still held."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.errors import NodeNotReadyError
from task_state_fixtures import Told, topology

from streamjoin.assignment.model import TopicPartition
from streamjoin.runtime.output.sink import OutgoingRecord
from streamjoin.runtime.tasks import manager as manager_module
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager
from streamjoin.state.task_lock import TaskLock

pytestmark = pytest.mark.broker

HELD, FREE = TaskId("attribute", 0), TaskId("attribute", 1)


class Discard:
    def send(self, record: OutgoingRecord) -> None:
        pass


async def commits(tasks: frozenset[TaskId]) -> None:
    pass


async def running(manager: TaskManager, task: TaskId, within_s: float = 20.0) -> None:
    async with asyncio.timeout(within_s):
        while manager.active[task].running is None:  # noqa: ASYNC110 - opened in the background
            await asyncio.sleep(0.02)


def partitions_of(manager: TaskManager, task: TaskId) -> frozenset[TopicPartition]:
    return frozenset(
        TopicPartition(topic, task.partition) for topic in manager.topology.inputs(task.subtopology)
    )


@pytest.fixture
def manager(state: StateManager, unique: str) -> TaskManager:
    return TaskManager(
        topology(unique),
        roles=Told(),  # type: ignore[arg-type]
        state=state,
        sink=Discard(),
        commit=commits,
    )


async def held_elsewhere(state: StateManager) -> TaskLock:
    """HELD's state directory, locked as another process of the host would hold it."""
    return await TaskLock.acquire(state.directory.task_dir(str(HELD)), str(HELD))


async def test_the_callback_returns_while_a_task_waits_for_its_state_directory(
    state: StateManager, manager: TaskManager
) -> None:
    elsewhere = await held_elsewhere(state)
    try:
        assigned = partitions_of(manager, HELD) | partitions_of(manager, FREE)
        await asyncio.wait_for(manager.on_assigned(assigned), 5)
        assert manager.active.keys() == {HELD, FREE}
        await running(manager, FREE)
        assert manager.active[HELD].running is None, "its directory is still held"
    finally:
        elsewhere.release()
    await running(manager, HELD)
    await manager.on_revoked(assigned)
    assert manager.active == {} and manager.failure is None


async def test_a_task_revoked_before_it_opened_is_dropped_cleanly(
    state: StateManager, manager: TaskManager
) -> None:
    elsewhere = await held_elsewhere(state)
    try:
        await asyncio.wait_for(manager.on_assigned(partitions_of(manager, HELD)), 5)
        await asyncio.wait_for(manager.on_revoked(partitions_of(manager, HELD)), 5)
    finally:
        elsewhere.release()
    assert manager.active == {} and manager.failure is None
    assert state.task(str(HELD)) is None
    again = await TaskLock.acquire(state.directory.task_dir(str(HELD)), str(HELD), timeout_s=1)
    again.release()  # the cancelled open let go of the directory


async def test_a_task_that_cannot_open_while_the_broker_is_unreachable_waits_for_it(
    state: StateManager,
    manager: TaskManager,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Opening a task asks the broker for its changelogs. A worker whose broker went away while
    a task opened failed with that open's error (exit 1, a traceback) instead of waiting for
    the broker as the rest of it does, until the broker watch gives up in one line."""
    ensure, refusals = state._ensure_changelogs, [NodeNotReadyError("node 1 is not ready")] * 2

    async def unreachable_at_first(spec: Any) -> None:
        if refusals:
            raise refusals.pop()
        await ensure(spec)

    monkeypatch.setattr(state, "_ensure_changelogs", unreachable_at_first)
    monkeypatch.setattr(manager_module, "OPEN_RETRY_S", 0.1)
    await asyncio.wait_for(manager.on_assigned(partitions_of(manager, FREE)), 5)
    await running(manager, FREE)
    assert manager.failure is None and refusals == []
    assert "waits for the broker to open" in caplog.text
    await manager.on_revoked(partitions_of(manager, FREE))
