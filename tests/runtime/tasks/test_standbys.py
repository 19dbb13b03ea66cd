"""A worker's standbys after an assignment (runtime/tasks/standbys.py): the stores of a task with
no role here any more close after the rebalance callback has returned, not within it (a moved
task's new owner waited for the old owner's closes: its follow-up rejoin comes only after the
callback); a task given a role again before that stays open."""

from __future__ import annotations

import pytest
from task_state_fixtures import Told, topology

from streamjoin.runtime.tasks.roles import Roles
from streamjoin.runtime.tasks.standbys import Standbys
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager

pytestmark = pytest.mark.broker

TASK = TaskId("attribute", 0)


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
