"""The worker's side of the task assignor: what it tells the group about itself, and which
roles (active, standby, learner) the group gave it.

A worker has a stable process id (given by the worker, runtime/process/identity.py: kept in its
state directory, so a restart is recognised as the same process with the same local state, and
shared by the worker processes of one host), a capacity, and an offset sum for every task it
has state of. The leader reads the changelog end offsets just before assigning.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streamjoin.assignment.task_metadata import AssignmentInfo, SubscriptionInfo
from streamjoin.assignment.tasks import model as assignment
from streamjoin.assignment.tasks.group_assignor import TaskPartitionAssignor
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.state.manager import StateManager
from streamjoin.state.phases import RUNNING_ACTIVE_OFFSET_SUM as RUNNING_ACTIVE

__all__ = ("Roles", "WorkerRoles")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Roles:
    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()
    learner: frozenset[TaskId] = frozenset()
    warmup: frozenset[TaskId] = frozenset()
    """Learners and standbys whose catching up completes a move to this worker."""
    draining: bool = False
    """The leader took this worker as draining: its tasks move off it warm."""


class WorkerRoles:
    def __init__(
        self,
        topology: AppTopology,
        state: StateManager,
        *,
        process_id: str,
        capacity: int = 1,
        endpoint: str | None = None,
        probing_interval_ms: int,
        settings: assignment.AssignorSettings,
    ) -> None:
        self.topology = topology
        self.process_id = process_id
        self.standby: set[TaskId] = set()
        """Tasks this worker keeps as standbys or learners now (maintained by the task manager)."""
        self.draining = False
        """Set by the worker when it stops warm: its subscriptions say so from then on."""
        self._sent_draining = False
        """Whether the last subscription said so."""
        self._state = state
        self._capacity = capacity
        self._endpoint = endpoint
        self.query_url: str | None = None
        """Where this worker answers queries, advertised in its subscription (set once bound)."""
        self.status_url: str | None = None
        """Where this worker serves its live status (GET <url>/status), advertised likewise."""
        self._counter = 0
        self.assignor = TaskPartitionAssignor(
            topology.subtopologies(),
            settings,
            member_info=self._info,
            end_offsets=self._end_offsets,
            probing_interval_ms=probing_interval_ms,
        )

    def roles(self) -> Roles:
        """What the last assignment said; tasks of joins this worker does not know are left out
        (another version of the app may have more)."""
        told: AssignmentInfo | None = self.assignor.latest
        if told is None:
            return Roles()

        def mine(tasks: Sequence[assignment.TaskId]) -> frozenset[TaskId]:
            return frozenset(
                self.topology.from_assignment(t) for t in tasks if self.topology.knows(t)
            )

        return Roles(
            mine(told.active),
            mine(told.standby),
            mine(told.learner),
            mine(told.warmup),
            told.draining,
        )

    def drain_answer(self, generation: int) -> bool | None:
        """Whether the group took this worker as draining, as the assignment of `generation`
        says; None if that assignment is not in yet or answers a subscription sent before the
        worker began to drain (call while the member is stable in `generation`)."""
        told = self.assignor.latest
        if told is None or not self._sent_draining or self.assignor.generation != generation:
            return None
        return told.draining

    @property
    def next_probe_ms(self) -> int | None:
        told = self.assignor.latest
        return told.next_probe_ms if told is not None and told.next_probe_ms >= 0 else None

    def _info(self) -> SubscriptionInfo:
        self._counter += 1
        sums: dict[assignment.TaskId, int] = {}
        lags: dict[assignment.TaskId, int] = {}
        known = {str(t): t for t in self.topology.all_tasks()}
        for task_id, offset_sum in self._state.offset_sums().items():
            if task_id in known:
                sums[self.topology.to_assignment(known[task_id])] = offset_sum
        for task_id, task in self._state.tasks.items():
            lag = task.lag()
            if (
                task_id in known
                and lag is not None
                and sums.get(self.topology.to_assignment(known[task_id])) != RUNNING_ACTIVE
            ):
                lags[self.topology.to_assignment(known[task_id])] = lag
        self._sent_draining = self.draining
        return SubscriptionInfo(
            self.process_id,
            self._capacity,
            self._endpoint,
            self._counter,
            sums,
            tuple(sorted(self.topology.to_assignment(t) for t in self.standby)),
            lags,
            query_url=self.query_url,
            status_url=self.status_url,
            draining=self.draining,
        )

    async def _end_offsets(
        self, tasks: Sequence[assignment.TaskId]
    ) -> Mapping[assignment.TaskId, int]:
        runtime = {task: self.topology.from_assignment(task) for task in tasks}
        specs = [self.topology.task_spec(t) for t in runtime.values()]
        sums = await self._state.ends.sums(self._state.app_id, specs)
        return {task: sums[str(runtime_id)] for task, runtime_id in runtime.items()}
