"""From target to assignment: copies bound for clients that lack the state wait as learners.

A target client that is not caught up must not run a stateful active while another client
could (and should not hold a standby while a better-placed client could). For each such task,
in order of fewest clients able to host it (the most fragile first, then by id):

- if the client running it is one of the target's standbys, it runs on and the target warms up
  in that standby slot meanwhile: no move, no warm-up budget;
- otherwise it stays where it runs and the target warms up as a learner, one per task and
  `max_warmup_replicas` in all;
- a task nobody runs, or one left without budget, swaps roles with a caught-up target standby
  (free, like Kafka's swap); failing that it runs on the most caught-up client, and without
  budget its move waits for a later rebalance.

Standbys bound for a client that is not caught up stay with a more caught-up client that holds
no copy, the target learning when budget is left; when that client is the target of a waiting
active move, that move warms up in the standby slot. Every such move asks for a follow-up.

A task running on a draining client (one about to stop) leaves it as soon as it can do so warm:
to a caught-up standby at once (the swap), else its target learns while it runs on, outside
the budget, since all of that client's tasks must move before it goes. A draining client is
never chosen to keep a standby.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from streamjoin.assignment.tasks.lags import TaskLags
from streamjoin.assignment.tasks.model import PendingMove, Role, TaskId, Warmup

__all__ = ("Placement", "stage_movements")


@dataclass(slots=True)
class Placement:
    """Where every copy of the stateful tasks goes in this assignment."""

    active: dict[TaskId, str]
    standby: dict[TaskId, list[str]]
    learner: dict[TaskId, str] = field(default_factory=dict)
    pending: list[PendingMove] = field(default_factory=list)


def stage_movements(
    stateful: Sequence[TaskId],
    lags: Mapping[TaskId, TaskLags],
    *,
    target_active: Mapping[TaskId, str],
    target_standby: Mapping[TaskId, list[str]],
    holders: Mapping[TaskId, str],
    budget: int,
    draining: frozenset[str] = frozenset(),
) -> Placement:
    """This assignment's stateful copies, given the targets and who runs each task now."""
    placement = Placement(
        {task: target_active[task] for task in stateful},
        {task: list(target_standby.get(task, ())) for task in stateful},
    )
    order = sorted(stateful, key=lambda task: (lags[task].host_count(), task))
    swapped: dict[TaskId, str] = {}
    for task in order:
        target = target_active[task]
        task_lags = lags[task]
        if task_lags.can_host(task_lags.lag(target)):
            continue
        running = holders.get(task)
        standbys = placement.standby[task]
        leaving = running in draining
        swap = running if running in standbys else None
        if swap is None and (running is None or budget == 0 or leaving):
            swap = next((c for c in task_lags.hosts() if c in standbys), None)
        if swap is not None:
            placement.active[task] = swap
            standbys[standbys.index(swap)] = target
            swapped[task] = target
            placement.pending.append(PendingMove(task, Role.ACTIVE, target, swap, Warmup.STANDBY))
            continue
        holder = running if running is not None else task_lags.hosts()[0]
        placement.active[task] = holder
        budget = _learn(
            placement, task, Role.ACTIVE, target=target, holder=holder, budget=budget, free=leaving
        )
    for task in order:
        budget = _stage_standbys(
            placement, task, lags[task], swapped.get(task), budget, draining=draining
        )
    placement.pending = [_warming_as_standby(move, placement) for move in placement.pending]
    return placement


def _warming_as_standby(move: PendingMove, placement: Placement) -> PendingMove:
    """A waiting active move whose target got one of the task's standby slots meanwhile (a
    better-placed standby for a lagging one) warms up in that slot."""
    if move.warmup is Warmup.WAITING and move.target in placement.standby[move.task]:
        return replace(move, warmup=Warmup.STANDBY)
    return move


def _stage_standbys(
    placement: Placement,
    task: TaskId,
    task_lags: TaskLags,
    swapped_in: str | None,
    budget: int,
    *,
    draining: frozenset[str],
) -> int:
    """Keep the task's standbys on caught-up clients while their targets warm up.

    The target that swapped into a standby slot for the active is already accounted for.
    """
    standbys = placement.standby[task]
    for index, target in enumerate(list(standbys)):
        lag = task_lags.lag(target)
        if target == swapped_in or lag <= task_lags.acceptable:
            continue
        holding = {placement.active[task], *standbys, placement.learner.get(task), *draining}
        better = next(
            (client for other, client in task_lags.ranked if other < lag and client not in holding),
            None,
        )
        if better is not None:
            standbys[index] = better
            budget = _learn(
                placement, task, Role.STANDBY, target=target, holder=better, budget=budget
            )
    return budget


def _learn(
    placement: Placement,
    task: TaskId,
    role: Role,
    *,
    target: str,
    holder: str,
    budget: int,
    free: bool = False,
) -> int:
    """Record a pending move; `target` learns if the task has no learner and budget is left
    (or the move is `free` of the budget); returns the budget left."""
    learns = (free or budget > 0) and task not in placement.learner
    if learns:
        placement.learner[task] = target
    warmup = Warmup.LEARNER if learns else Warmup.WAITING
    placement.pending.append(PendingMove(task, role, target, holder, warmup))
    return budget - 1 if learns and not free else budget
