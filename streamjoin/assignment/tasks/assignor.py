"""The task assignor (KIP-441 style): stickiness ahead of capacity balance, learners, follow-ups.

One pure function of its inputs, whatever their order:

1. lags of every client on every stateful task (`lags`);
2. a balanced target for stateful tasks that keeps them where they are within each client's
   capacity share and moves only what balance requires (`active_placement`,
   `standby_placement`);
3. moves toward clients that lack the state become learners, within the warm-up budget, while
   the task keeps running where it is (`movements`). The follow-up flag asks for the probing
   rebalance that promotes caught-up learners; once they all are, membership unchanged, the
   assignment no longer changes;
4. stateless tasks, placed around the stateful actives as they run now (`active_placement`).

A draining client (one that is stopping) weighs nothing in 2 and 4: its stateless tasks move at
once, its stateful ones go to a caught-up standby at once (a swap, as when nobody runs a task)
or stay on it while their targets learn, outside the warm-up budget, since its every task must
move before it goes. When every client drains, none is treated as draining: there is nobody to
hand to.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from streamjoin.assignment.tasks.active_placement import place_stateful, place_stateless
from streamjoin.assignment.tasks.lags import compute_lags
from streamjoin.assignment.tasks.model import (
    AssignorSettings,
    ClientAssignment,
    ClientState,
    TaskAssignment,
    TaskId,
    TaskSpec,
)
from streamjoin.assignment.tasks.movements import Placement, stage_movements
from streamjoin.assignment.tasks.standby_placement import place_standbys
from streamjoin.errors import ConfigurationError

__all__ = ("assign_tasks",)

logger = logging.getLogger(__name__)

T = TypeVar("T")
K = TypeVar("K", str, TaskId)


def assign_tasks(
    clients: Iterable[ClientState],
    tasks: Iterable[TaskSpec],
    settings: AssignorSettings | None = None,
) -> TaskAssignment:
    """Active, standby and learner tasks for every client, and what is still moving.

    Tasks a client reports that are not in `tasks` (removed since) are ignored.
    """
    settings = settings or AssignorSettings()
    members = _sorted_unique(clients, lambda c: c.process_id, "client")
    specs = _sorted_unique(tasks, lambda s: s.task, "task")
    if not members:
        return TaskAssignment({})
    if all(member.draining for member in members):
        members = [replace(member, draining=False) for member in members]
    draining = frozenset(member.process_id for member in members if member.draining)
    lags = compute_lags(specs, members, settings.acceptable_recovery_lag)
    stateful = [spec.task for spec in specs if spec.stateful]
    target = place_stateful(stateful, members, lags)
    standbys = place_standbys(stateful, members, lags, target, settings.num_standby_replicas)
    placement = stage_movements(
        stateful,
        lags,
        target_active=target.owners,
        target_standby=standbys,
        holders=target.holders,
        budget=settings.max_warmup_replicas,
        draining=draining,
    )
    stateless = [spec.task for spec in specs if not spec.stateful]
    running = Counter(placement.active.values())
    assignment = _collect(
        members, placement, place_stateless(stateless, members, running), draining
    )
    if assignment.followup:
        logger.debug(
            "task assignment: %d moves pending, %d learners",
            len(assignment.pending),
            len(placement.learner),
        )
    return assignment


def _sorted_unique(items: Iterable[T], key: Callable[[T], K], what: str) -> list[T]:
    ordered = sorted(items, key=key)
    for first, second in itertools.pairwise(ordered):
        if key(first) == key(second):
            raise ConfigurationError(f"{what} {key(first)} is listed twice")
    return ordered


def _collect(
    members: list[ClientState],
    placement: Placement,
    stateless: dict[TaskId, str],
    draining: frozenset[str],
) -> TaskAssignment:
    active: dict[str, list[TaskId]] = {member.process_id: [] for member in members}
    standby: dict[str, list[TaskId]] = {member.process_id: [] for member in members}
    learner: dict[str, list[TaskId]] = {member.process_id: [] for member in members}
    for task, client in (placement.active | stateless).items():
        active[client].append(task)
    for task, clients in placement.standby.items():
        for client in clients:
            standby[client].append(task)
    for task, client in placement.learner.items():
        learner[client].append(task)
    return TaskAssignment(
        {
            client: ClientAssignment(
                tuple(sorted(active[client])),
                tuple(sorted(standby[client])),
                tuple(sorted(learner[client])),
            )
            for client in active
        },
        tuple(placement.pending),
        draining,
    )
