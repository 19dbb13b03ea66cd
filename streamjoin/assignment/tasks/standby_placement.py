"""The target for standbys: N distinct clients per stateful task, with the most state first.

Counts come first, as for actives: every client's stateful copies (actives plus standbys) get a
capacity share of all copies, so the state each client keeps hot is balanced too; the rounded-up
shares go to clients already holding more than their share, then to those with most state.
Within those counts a client keeps the standbys it is caught up on; the rest go to clients with
the most state for them. A draining client keeps none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from streamjoin.assignment.tasks.active_placement import ActiveTarget
from streamjoin.assignment.tasks.lags import TaskLags
from streamjoin.assignment.tasks.model import ClientState, TaskId
from streamjoin.assignment.tasks.placement import Need, place
from streamjoin.assignment.tasks.quotas import apportion

__all__ = ("place_standbys",)


def place_standbys(
    stateful: Sequence[TaskId],
    clients: Sequence[ClientState],
    lags: Mapping[TaskId, TaskLags],
    target: ActiveTarget,
    replicas: int,
) -> dict[TaskId, list[str]]:
    """Target standby clients of every stateful task (sorted `stateful`, sorted `clients`).

    Fewer than `replicas` copies per task only when there are not enough clients. Among clients
    equally caught up, the one running the task now is kept first (then previous standbys), and
    it gives up that standby last: should the task's target owner still be warming up, the task
    then runs on where it is, the target warming up in the standby slot, without moving and
    without a learner.
    """
    owners, holders = target.owners, target.holders
    weights = {client.process_id: client.weight for client in clients}
    closed = frozenset(client for client, weight in weights.items() if not weight)
    copies = min(replicas, len(clients) - len(closed) - 1)
    if copies <= 0 or not stateful:
        return {}
    capacity = sum(weights.values())
    mirrored = {(c.process_id, task) for c in clients for task in c.previous_standby}
    needs = []
    for task in stateful:
        task_lags = lags[task]
        running = holders.get(task)
        keepers = tuple(
            sorted(
                (
                    c
                    for lag, c in task_lags.ranked
                    if c != owners[task] and c not in closed and task_lags.can_host(lag)
                ),
                key=lambda c: (task_lags.lag(c), c != running, (c, task) not in mirrored, c),
            )[:copies]
        )
        forbidden = closed | {owners[task]}
        needs.append(Need(task, copies, keepers, forbidden, task_lags, running))
    actives = Counter(owners[task] for task in stateful)
    keeping = Counter(client for need in needs for client in need.claims)
    partial = Counter(
        client
        for need in needs
        for lag, client in need.lags.ranked
        if lag < need.lags.end and client not in need.claims and client not in need.forbidden
    )
    totals = apportion(
        len(stateful) * (1 + copies),
        weights,
        prefer=lambda c, rounded_down: (
            keeping[c] + actives[c] <= rounded_down,
            actives[c] <= len(stateful) * weights[c] // capacity,
            -partial[c],
            c,
        ),
        lower={client: actives[client] for client in weights},
        upper={client: len(stateful) if weight else 0 for client, weight in weights.items()},
    )
    return place(needs, {c: totals[c] - actives[c] for c in weights}, sorted(weights))
