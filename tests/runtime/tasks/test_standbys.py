"""A worker's standbys after an assignment (runtime/tasks/standbys.py): the stores of a task with
no role here any more close after the rebalance callback has returned, not within it (a moved
task's new owner waited for the old owner's closes: its follow-up rejoin comes only after the
callback); a task given a role again before that stays open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from streamjoin import App, JoinWindows
from streamjoin.broker import Broker
from streamjoin.runtime.tasks.roles import Roles
from streamjoin.runtime.tasks.standbys import Standbys
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.state.manager import StateManager

pytestmark = pytest.mark.broker

TASK = TaskId("attribute", 0)


@dataclass
class Told:
    """What the last assignment gave this worker (the roles' side the standbys read)."""

    told: Roles = field(default_factory=Roles)
    standby: set[TaskId] = field(default_factory=set)

    def roles(self) -> Roles:
        return self.told


@pytest.fixture
async def state(broker: Broker, unique: str, tmp_path: Path) -> AsyncIterator[StateManager]:
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    app_id = f"standbys-{unique}"
    manager = StateManager(
        state_dir=tmp_path, app_id=app_id, bootstrap=broker.bootstrap, producer=producer
    )
    await manager.start()
    yield manager
    await manager.close()
    await producer.stop()


def topology(unique: str) -> AppTopology:
    app = App(f"standbys-{unique}")

    window = JoinWindows(before=0, after=1_000)

    @app.join(app.topic("imp"), app.topic("clk"), window=window, into="out")
    def attribute(left: object, right: object) -> object:
        return left

    return AppTopology(app, {"attribute": 2})


async def test_a_task_without_a_role_closes_after_the_callback_returned(
    state: StateManager, unique: str
) -> None:
    roles = Told(Roles(standby=frozenset({TASK})))
    standbys = Standbys(topology(unique), roles, state, active=lambda: ())  # type: ignore[arg-type]
    await standbys.sync()
    assert state.task(str(TASK)) is not None and roles.standby == {TASK}
    roles.told = Roles()
    await standbys.sync()
    assert state.task(str(TASK)) is not None, "still open when the callback returns"
    await standbys.close()
    assert state.task(str(TASK)) is None


async def test_a_task_given_a_role_again_before_its_close_stays_open(
    state: StateManager, unique: str
) -> None:
    roles = Told(Roles(standby=frozenset({TASK})))
    standbys = Standbys(topology(unique), roles, state, active=lambda: ())  # type: ignore[arg-type]
    await standbys.sync()
    roles.told = Roles()
    await standbys.sync()
    roles.told = Roles(learner=frozenset({TASK}))
    await standbys.sync()
    await standbys.close()
    assert state.task(str(TASK)) is not None and roles.standby == {TASK}
