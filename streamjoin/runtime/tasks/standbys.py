"""The worker's standbys and learners, kept in line with each assignment: they tail their
changelogs (runtime/tasks/roles.py says which); so does an active task whose partitions the
cooperative step still withholds (it will run here after the follow-up).

Tasks this worker has no role in any more are closed (their state stays on disk) in the
background, once the rebalance callback has returned: closing a store waits for RocksDB's
background jobs, and a moved task's new owner waited for that before (the follow-up rejoin
comes only after the callback).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.state.manager import StateManager

__all__ = ("Standbys",)

logger = logging.getLogger(__name__)


class Standbys:
    def __init__(
        self,
        topology: AppTopology,
        roles: WorkerRoles,
        state: StateManager,
        active: Callable[[], Iterable[TaskId]],
    ) -> None:
        """`active()`: the worker's active tasks (running or restoring) at the moment."""
        self._topology = topology
        self._roles = roles
        self._state = state
        self._active = active
        self._closing: set[asyncio.Task[None]] = set()

    async def sync(self) -> None:
        """Open the standbys and learners the assignment gives this worker; close, in the
        background, what has no role here besides its active tasks."""
        running = set(self._active())
        told = self._roles.roles()
        wanted = {
            t
            for t in (told.standby | told.learner | told.active) - running
            if self._topology.is_stateful(t.subtopology)
        }
        for task_id in sorted(wanted - self._roles.standby):
            await self._state.open_standby(self._topology.task_spec(task_id))
            self._roles.standby.add(task_id)
        self._roles.standby &= wanted
        kept = {str(t) for t in running | wanted}
        unwanted = sorted(self._state.tasks.keys() - kept)
        if unwanted:
            closing = asyncio.create_task(self._close(unwanted), name="close tasks")
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Wait for the closing still under way (before the worker closes its state)."""
        await asyncio.gather(*self._closing, return_exceptions=True)

    async def _close(self, names: list[str]) -> None:
        await asyncio.sleep(0)  # the rebalance goes on first
        for name in names:
            # Given a role here again meanwhile: it stays open.
            if name in {str(t) for t in {*self._active(), *self._roles.standby}}:
                continue
            await self._state.close_task(name)
            logger.info("task %s closed: no role here any more", name)
