"""Where actives run: a balanced sticky target for stateful tasks, stateless ones filling up.

Stateful actives are balanced on their own, by capacity share per client and per subtopology.
A stateful task stays with the client running it as long as that client may host it (caught
up, or least lagging when nobody is) and is within its quota; only the excess moves, preferably
to a client that is caught up already. Stateless tasks carry no state, so they are placed last,
around the stateful actives as they actually run in this assignment (learners still warming
up included), to even out each client's share of all actives.

When there are at least as many tasks as clients, every client gets one, whatever its share.
A draining client weighs nothing and takes nothing (it may only keep running what it runs, see
movements.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streamjoin.assignment.tasks.lags import TaskLags, stateless_lags
from streamjoin.assignment.tasks.model import RUNNING_ACTIVE, ClientState, TaskId
from streamjoin.assignment.tasks.placement import Need, place
from streamjoin.assignment.tasks.quotas import row_quotas, share_ranges

__all__ = ("ActiveTarget", "place_stateful", "place_stateless")


@dataclass(frozen=True, slots=True)
class ActiveTarget:
    owners: dict[TaskId, str]
    """Target client of every stateful task."""
    holders: dict[TaskId, str]
    """The client that runs each stateful task now and may go on running it, if any."""


def place_stateful(
    stateful: Sequence[TaskId],
    clients: Sequence[ClientState],
    lags: Mapping[TaskId, TaskLags],
) -> ActiveTarget:
    """Target owner of every stateful task (`stateful` and `clients` sorted)."""
    weights = _weights(clients)
    holders = _stateful_holders(clients, lags)
    bounds = share_ranges(len(stateful), weights, lower=_at_least_one(len(stateful), weights))
    return ActiveTarget(_fill_rows(stateful, weights, bounds, holders, lags), holders)


def place_stateless(
    stateless: Sequence[TaskId],
    clients: Sequence[ClientState],
    stateful_counts: Mapping[str, int],
) -> dict[TaskId, str]:
    """Owner of every stateless task, given each client's stateful actives in this assignment
    (a draining client's count is what it still runs: its share)."""
    weights = _weights(clients)
    counts = {client: stateful_counts.get(client, 0) for client in weights}
    total = len(stateless) + sum(counts.values())
    serving = sum(1 for weight in weights.values() if weight)
    lower = {client: max(count, 1 if weights[client] else 0) for client, count in counts.items()}
    if total < serving or sum(lower.values()) > total:
        lower = counts
    bounds = {
        client: (low - counts[client], high - counts[client])
        for client, (low, high) in share_ranges(total, weights, lower=lower).items()
    }
    no_state = {task: stateless_lags(len(clients)) for task in stateless}
    previous = _stateless_holders(clients, set(stateless))
    return _fill_rows(stateless, weights, bounds, previous, no_state)


def _weights(clients: Sequence[ClientState]) -> dict[str, int]:
    return {client.process_id: client.weight for client in clients}


def _at_least_one(tasks: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Lower bounds that give every client that takes tasks one, when there are enough."""
    serving = [client for client, weight in weights.items() if weight]
    enough = tasks >= len(serving)
    return {client: 1 if enough and weights[client] else 0 for client in weights}


def _fill_rows(
    tasks: Sequence[TaskId],
    weights: Mapping[str, int],
    bounds: Mapping[str, tuple[int, int]],
    holders: Mapping[TaskId, str],
    lags: Mapping[TaskId, TaskLags],
) -> dict[TaskId, str]:
    """Owners of `tasks`: per-subtopology quotas with client totals within `bounds`, placed.
    A client of weight 0 (draining) takes nothing and claims nothing: what it holds is placed
    as if nobody held it."""
    closed = frozenset(client for client, weight in weights.items() if not weight)
    kept = {task: client for task, client in holders.items() if client not in closed}
    rows: dict[int, list[TaskId]] = {}
    for task in tasks:
        rows.setdefault(task.subtopology, []).append(task)
    held: dict[int, dict[str, int]] = {}
    hostable: dict[int, dict[str, int]] = {}
    for task in tasks:
        holder = kept.get(task)
        if holder is not None:
            _tally(held, task.subtopology, holder)
        else:
            for client in lags[task].hosts():
                if client not in closed:
                    _tally(hostable, task.subtopology, client)
    sizes = {row: len(members) for row, members in rows.items()}
    cells = row_quotas(sizes, weights, bounds, held, hostable)
    clients = sorted(weights)
    owners: dict[TaskId, str] = {}
    for row, members in sorted(rows.items()):
        needs = [
            Need(task, 1, (kept[task],) if task in kept else (), closed, lags[task])
            for task in members
        ]
        for task, chosen in place(needs, cells[row], clients).items():
            owners[task] = chosen[0]
    return owners


def _stateful_holders(
    clients: Sequence[ClientState], lags: Mapping[TaskId, TaskLags]
) -> dict[TaskId, str]:
    """For each stateful task, the client running it that may go on running it, if any.

    A client runs a task if it lists it as a previous active or reports it as a running active.
    Should two claim it (a zombie), the least lagging wins, then the first by id.
    """
    best: dict[TaskId, tuple[int, str]] = {}
    for client in clients:
        running = {t for t, s in client.offset_sums.items() if s == RUNNING_ACTIVE}
        for task in client.previous_active | running:
            task_lags = lags.get(task)
            if task_lags is None:
                continue
            lag = task_lags.lag(client.process_id)
            if task_lags.can_host(lag):
                candidate = (lag, client.process_id)
                best[task] = min(best.get(task, candidate), candidate)
    return {task: client for task, (_, client) in best.items()}


def _stateless_holders(clients: Sequence[ClientState], stateless: set[TaskId]) -> dict[TaskId, str]:
    """For each stateless task, the first client by id that ran it."""
    holders: dict[TaskId, str] = {}
    for client in clients:
        for task in sorted(client.previous_active & stateless):
            holders.setdefault(task, client.process_id)
    return holders


def _tally(counts: dict[int, dict[str, int]], row: int, client: str) -> None:
    cells = counts.setdefault(row, {})
    cells[client] = cells.get(client, 0) + 1
