"""Exactly-once: tasks lost twice at once, by the group (`on_lost`, fenced) and by the worker
failing on it (`lose_all`), are dropped once: the worker then starts over as designed, instead
of failing on a task the other call had already dropped (KeyError, exit 1)."""

from __future__ import annotations

import asyncio

import pytest
from task_state_fixtures import Told, topology

from streamjoin.assignment.model import TopicPartition
from streamjoin.runtime.output.sink import OutgoingRecord
from streamjoin.runtime.tasks.manager import TaskManager, TasksLost
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager

pytestmark = pytest.mark.broker


class Discard:
    def send(self, record: OutgoingRecord) -> None:
        pass


async def never_commits(tasks: frozenset[TaskId]) -> None:
    raise AssertionError(f"a lost task is never committed: {sorted(tasks)}")


async def test_tasks_lost_by_the_group_while_the_worker_loses_them_too_are_dropped_once(
    state: StateManager, unique: str
) -> None:
    app = topology(unique)
    manager = TaskManager(
        app,
        roles=Told(),  # type: ignore[arg-type]
        state=state,
        sink=Discard(),
        commit=never_commits,
        transaction=asyncio.Lock(),
    )
    partitions = frozenset(
        TopicPartition(topic, p) for topic in app.inputs("attribute") for p in (0, 1)
    )
    await manager.on_assigned(partitions)
    assert sorted(manager.active) == [TaskId("attribute", 0), TaskId("attribute", 1)]
    # The worker fails on the loss and drops everything while the group's callback runs.
    await asyncio.gather(manager.lose_all(), manager.on_lost(partitions))
    assert manager.active == {}
    assert isinstance(manager.failure, TasksLost)
    assert state.task(str(TaskId("attribute", 0))) is None
    assert state.task(str(TaskId("attribute", 1))) is None
