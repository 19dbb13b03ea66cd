"""Spread one client's tasks over its members (the processes of one host), as Kafka Streams
spreads a client's tasks over its stream threads.

The task assignor decides per client (a process id, shared by every worker process of a
host); this step decides which member runs each of the client's tasks. Actives first, balanced
by member capacity, each member keeping the actives it ran before up to its share; then the
standbys and learners, so that each member's total load is balanced too, again keeping what
each member had. Moving a task between members of one host costs no restore (they share the
state directory), but a member that keeps its tasks keeps its stores open and its caches warm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from streamjoin.assignment.tasks.model import ClientAssignment, TaskId

__all__ = ("Member", "spread_over_members")


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a client as its subscription describes it."""

    name: str
    capacity: int = 1
    previous_active: frozenset[TaskId] = frozenset()
    previous_standby: frozenset[TaskId] = frozenset()
    """Standbys and learners it held in the previous generation."""


def spread_over_members(
    roles: ClientAssignment, members: Sequence[Member]
) -> dict[str, ClientAssignment]:
    """Every member's roles (every member present); together they are exactly `roles`."""
    if not members:
        return {}
    running = {m.name: len(m.previous_active.intersection(roles.active)) for m in members}
    shares = _shares(len(roles.active), members, running)
    actives = _spread(roles.active, members, shares, active=True)
    active_count = {m: len(tasks) for m, tasks in actives.items()}
    others = sorted([*roles.standby, *roles.learner])
    total = _shares(len(roles.active) + len(others), members, active_count)
    room = {m.name: max(0, total[m.name] - active_count[m.name]) for m in members}
    rest = _spread(others, members, room, active=False)
    standby, learner = set(roles.standby), set(roles.learner)
    return {
        m.name: ClientAssignment(
            tuple(sorted(actives[m.name])),
            tuple(sorted(t for t in rest[m.name] if t in standby)),
            tuple(sorted(t for t in rest[m.name] if t in learner)),
        )
        for m in members
    }


def _shares(count: int, members: Sequence[Member], held: Mapping[str, int]) -> dict[str, int]:
    """`count` split in proportion to capacity (largest remainder); ties go to the members that
    hold the most beyond their whole share already, then by name: deterministic, and given
    its own result again it gives the same split."""
    capacity = sum(m.capacity for m in members)
    shares = {m.name: count * m.capacity // capacity for m in members}
    left = count - sum(shares.values())
    order = sorted(
        members,
        key=lambda m: (
            -(count * m.capacity % capacity),
            shares[m.name] - held.get(m.name, 0),
            m.name,
        ),
    )
    for m in order[:left]:
        shares[m.name] += 1
    return shares


def _spread(
    tasks: Iterable[TaskId],
    members: Sequence[Member],
    quota: Mapping[str, int],
    *,
    active: bool,
) -> dict[str, list[TaskId]]:
    """Each member keeps its previous tasks up to its quota (those it had in the same role,
    else in the other: a promoted learner stays where its store is open), then the rest go to
    the member furthest below its quota (over it only when every quota is full)."""
    placed: dict[str, list[TaskId]] = {m.name: [] for m in members}
    left = sorted(tasks)
    for same_role in (True, False):
        previous = {
            task: m.name
            for m in members
            for task in (m.previous_active if active == same_role else m.previous_standby)
        }
        unplaced = []
        for task in left:
            owner = previous.get(task)
            if owner is not None and len(placed[owner]) < quota[owner]:
                placed[owner].append(task)
            else:
                unplaced.append(task)
        left = unplaced
    capacity = {m.name: m.capacity for m in members}
    for task in left:
        target = min(
            placed,
            key=lambda m: (
                len(placed[m]) >= quota[m],
                len(placed[m]) - quota[m],
                len(placed[m]) / capacity[m],
                m,
            ),
        )
        placed[target].append(task)
    return placed
