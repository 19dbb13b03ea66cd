"""What makes a task assignment valid and how balanced it is (Kafka's V1-V3 and B1-B3, plus V4).

Validity: every task runs exactly once; every stateful task has its standbys on distinct
clients (fewer only when clients run out); learners only for stateful tasks, at most one per
task and `max_warmup_replicas` in all (besides those of moves off draining clients, which hold
no standbys or learners); no client holds two copies of a task. Balance, per unit
of capacity: actives (B1), stateful copies (B2) and each subtopology's actives (B3). The plan
command prints them; the tests hold every assignment to them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamjoin.assignment.tasks.model import (
    AssignorSettings,
    TaskAssignment,
    TaskId,
    TaskSpec,
    Warmup,
)

__all__ = ("Spreads", "problems", "spreads")


@dataclass(frozen=True, slots=True)
class Spreads:
    """Max minus min over clients of tasks per unit of capacity."""

    active: float
    """All actives (B1)."""
    stateful: float
    """Stateful actives plus standbys (B2)."""
    subtopology: float
    """The largest spread of one subtopology's actives (B3)."""

    def balanced(self) -> bool:
        return max(self.active, self.stateful, self.subtopology) <= 1


def problems(
    assignment: TaskAssignment, tasks: Iterable[TaskSpec], settings: AssignorSettings
) -> list[str]:
    """Everything that makes the assignment invalid, one line each (empty when valid)."""
    specs = {spec.task: spec for spec in tasks}
    found: list[str] = []
    actives: Counter[TaskId] = Counter()
    copies: Counter[TaskId] = Counter()
    for client, roles in sorted(assignment.clients.items()):
        held = [*roles.active, *roles.standby, *roles.learner]
        for task, count in sorted(Counter(held).items()):
            if count > 1:
                found.append(f"{client} holds {count} copies of {task}")
        for task in held:
            if task not in specs:
                found.append(f"{client} holds unknown task {task}")
            elif task not in roles.active and not specs[task].stateful:
                found.append(f"{client} mirrors stateless task {task}")
        actives.update(roles.active)
        copies.update(set(held))
    clients = len(assignment.clients) - len(assignment.draining)
    extra = 0
    for task, spec in sorted(specs.items()):
        if actives[task] != 1:
            found.append(f"{task} is active on {actives[task]} clients")
        wanted = min(clients, 1 + settings.num_standby_replicas) if spec.stateful else 1
        if copies[task] == wanted + 1:
            extra += 1
        elif copies[task] != wanted:
            found.append(f"{task} has {copies[task]} copies, expected {wanted}")
    learners = sum(len(roles.learner) for roles in assignment.clients.values())
    free = sum(
        1
        for move in assignment.pending
        if move.warmup is Warmup.LEARNER and move.holder in assignment.draining
    )
    if learners != extra or learners - free > settings.max_warmup_replicas:
        off = f", {free} moving off draining clients" if free else ""
        found.append(
            f"{learners} learners ({extra} tasks with an extra copy{off}), "
            f"at most {settings.max_warmup_replicas} allowed{' besides those' if free else ''}"
        )
    for client in sorted(assignment.draining):
        roles = assignment.clients[client]
        if roles.standby or roles.learner:
            found.append(f"draining {client} was given standbys or learners")
    return found


def spreads(
    assignment: TaskAssignment, tasks: Iterable[TaskSpec], capacities: Mapping[str, int]
) -> Spreads:
    """How evenly the assignment loads its clients."""
    stateful = {spec.task for spec in tasks if spec.stateful}
    active: dict[str, float] = {}
    copies: dict[str, float] = {}
    per_subtopology: dict[int, Counter[str]] = {}
    for client, roles in assignment.clients.items():
        active[client] = len(roles.active) / capacities[client]
        held = sum(1 for task in roles.active if task in stateful) + len(roles.standby)
        copies[client] = held / capacities[client]
        for task in roles.active:
            per_subtopology.setdefault(task.subtopology, Counter())[client] += 1
    subtopology = max(
        (
            _spread(counts[c] / capacities[c] for c in assignment.clients)
            for counts in per_subtopology.values()
        ),
        default=0.0,
    )
    return Spreads(_spread(active.values()), _spread(copies.values()), subtopology)


def _spread(values: Iterable[float]) -> float:
    listed = list(values)
    return max(listed) - min(listed) if listed else 0.0
