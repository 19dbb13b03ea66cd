"""Kafka's canonical balanced target, as a baseline to count task moves against.

Kafka Streams' HighAvailabilityTaskAssignor balances toward a layout that depends only on the
sorted task and client ids and the capacities: tasks dealt round-robin over clients. It ignores
where state already is, so after a membership change every task whose dealt owner changed has
to move, however balanced the old layout was. The benchmark and the tests measure streamjoin's
sticky target against it; nothing in the runtime uses it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from streamjoin.assignment.tasks.model import (
    AssignorSettings,
    ClientAssignment,
    ClientState,
    TaskAssignment,
    TaskId,
    TaskSpec,
)

__all__ = ("round_robin_assign", "round_robin_target")


def round_robin_target(
    capacities: Mapping[str, int],
    tasks: Iterable[TaskId],
    loads: Mapping[str, int] | None = None,
) -> dict[TaskId, str]:
    """Owner of every task: sorted tasks dealt to sorted clients in proportion to capacity.

    Each task goes to the client whose load (tasks / capacity, counting `loads` already given)
    would be lowest after taking it, ties to the first by id; with equal capacities and no
    `loads` that is plain round-robin.
    """
    counts = {client: (loads or {}).get(client, 0) for client in capacities}
    heap = [((n + 1) / capacities[c], n, c) for c, n in sorted(counts.items())]
    heapq.heapify(heap)
    owners: dict[TaskId, str] = {}
    for task in sorted(tasks):
        _, count, client = heapq.heappop(heap)
        owners[task] = client
        heapq.heappush(heap, ((count + 2) / capacities[client], count + 1, client))
    return owners


def round_robin_assign(
    clients: Iterable[ClientState],
    tasks: Iterable[TaskSpec],
    settings: AssignorSettings | None = None,
) -> TaskAssignment:
    """The canonical target as an assignment: stateful tasks dealt first, then stateless ones.

    Actives only, reached at once: a lower bound on what Kafka moves on the way there.
    """
    capacities = {client.process_id: client.capacity for client in clients}
    specs = list(tasks)
    stateful = round_robin_target(capacities, (s.task for s in specs if s.stateful))
    loads = dict.fromkeys(capacities, 0)
    for client in stateful.values():
        loads[client] += 1
    stateless = round_robin_target(capacities, (s.task for s in specs if not s.stateful), loads)
    active: dict[str, list[TaskId]] = {client: [] for client in capacities}
    for task, client in (stateful | stateless).items():
        active[client].append(task)
    return TaskAssignment(
        {client: ClientAssignment(tuple(sorted(owned))) for client, owned in active.items()}
    )
