"""Fill per-client quotas with concrete tasks: keep what clients hold, move only the excess.

Used for actives (one copy per task, one call per subtopology) and for standbys (N copies per
task, never on the task's active client). Order of preference:

1. A client keeps the tasks it claims (holds and may go on holding) up to its quota. Over its
   quota, it gives up first the tasks that a client with room could take over at no cost
   (already caught up), then those another client has the most state for, then the cheapest.
2. Tasks still short of copies go to clients with room that are caught up on them, then to
   clients with the most state for them, then to the clients with the most room left.
3. If the only clients with room cannot take a task (its active is there, say), earlier picks
   are re-routed along an augmenting path; failing that, the task goes over some quota.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streamjoin.assignment.tasks.augmenting import augment
from streamjoin.assignment.tasks.lags import TaskLags
from streamjoin.assignment.tasks.model import TaskId

__all__ = ("Need", "place")


@dataclass(frozen=True, slots=True)
class Need:
    """A task that needs `copies` distinct clients, none of them in `forbidden`."""

    task: TaskId
    copies: int
    claims: tuple[str, ...]
    """Clients that hold the task now and may keep it, best first; at most `copies`."""
    forbidden: frozenset[str]
    lags: TaskLags
    anchor: str | None = None
    """A claimant that gives the task up only after its other claims (see `_release_key`)."""


def place(
    needs: Sequence[Need], quotas: Mapping[str, int], clients: Sequence[str]
) -> dict[TaskId, list[str]]:
    """The clients of every task; each client ends with exactly its quota when that is possible."""
    placer = _Placer(needs, quotas, clients)
    placer.fill_from_state(free_only=True)
    placer.fill_by_room([n for n in placer.short.values() if n.lags.unreported_can_host])
    placer.fill_from_state(free_only=False)
    placer.fill_by_room(list(placer.short.values()))
    placer.reroute_or_overfill()
    return placer.chosen


class _Placer:
    """The picks made so far, the room left, and the tasks still short of copies."""

    def __init__(
        self, needs: Sequence[Need], quotas: Mapping[str, int], clients: Sequence[str]
    ) -> None:
        self.clients = clients
        self.quotas = quotas
        self.chosen = _keep_claims(needs, quotas, clients)
        self.spare = {client: quotas.get(client, 0) for client in clients}
        for holders in self.chosen.values():
            for client in holders:
                self.spare[client] -= 1
        self.short = {n.task: n for n in needs if len(self.chosen[n.task]) < n.copies}
        self.forbidden = {n.task: n.forbidden for n in needs}

    def allowed(self, need: Need, client: str) -> bool:
        return client not in need.forbidden and client not in self.chosen[need.task]

    def take(self, need: Need, client: str) -> None:
        self.chosen[need.task].append(client)
        self.spare[client] -= 1
        if len(self.chosen[need.task]) == need.copies:
            del self.short[need.task]

    def fill_from_state(self, *, free_only: bool) -> None:
        """Place on clients with room that have state, least lag first.

        With `free_only`, only on clients that may run the task's active right away.
        """
        edges = sorted(
            (lag, task, client)
            for task, need in self.short.items()
            for lag, client in need.lags.ranked
            if (not free_only or need.lags.can_host(lag)) and self.allowed(need, client)
        )
        for _, task, client in edges:
            need = self.short.get(task)
            if need is not None and self.spare[client] > 0 and self.allowed(need, client):
                self.take(need, client)

    def fill_by_room(self, needs: list[Need]) -> None:
        """Give each task, in task order, the allowed clients with the most room left."""
        heap = [(-room, client) for client, room in self.spare.items() if room > 0]
        heapq.heapify(heap)
        for need in sorted(needs, key=lambda n: n.task):
            skipped: list[tuple[int, str]] = []
            while heap and need.task in self.short:
                negative, client = heapq.heappop(heap)
                if -negative != self.spare[client]:
                    if self.spare[client] > 0:
                        heapq.heappush(heap, (-self.spare[client], client))
                    continue
                if not self.allowed(need, client):
                    skipped.append((negative, client))
                    continue
                self.take(need, client)
                if self.spare[client] > 0:
                    heapq.heappush(heap, (-self.spare[client], client))
            for entry in skipped:
                heapq.heappush(heap, entry)

    def reroute_or_overfill(self) -> None:
        """Complete the tasks no client with room could take."""
        if not self.short:
            return
        holders: dict[str, list[TaskId]] = {client: [] for client in self.clients}
        for task, clients in self.chosen.items():
            for client in clients:
                holders[client].append(task)
        for task in sorted(self.short):
            need = self.short.pop(task)
            while len(self.chosen[task]) < need.copies:
                reached = augment(
                    task,
                    self.clients,
                    picks=self.chosen,
                    holders=holders,
                    spare=self.spare,
                    allowed=lambda t, c: c not in self.forbidden[t],
                )
                if reached is None:
                    client = min(
                        (c for c in self.clients if self.allowed(need, c)),
                        key=lambda c: (self.spare[c] - self.quotas.get(c, 0), c),
                    )
                    self.chosen[task].append(client)
                    self.spare[client] -= 1
                    holders[client].append(task)


def _keep_claims(
    needs: Sequence[Need], quotas: Mapping[str, int], clients: Sequence[str]
) -> dict[TaskId, list[str]]:
    """Every task's claims, minus those that over-quota clients give up."""
    chosen = {need.task: list(need.claims) for need in needs}
    claimed: dict[str, list[Need]] = {}
    for need in needs:
        for client in need.claims:
            claimed.setdefault(client, []).append(need)
    room = {c: quotas.get(c, 0) - len(claimed.get(c, ())) for c in clients}
    open_clients = [c for c in clients if room[c] > 0]
    for client in sorted(claimed):
        excess = -room[client]
        if excess > 0:
            ranked = sorted(
                claimed[client], key=lambda n: _release_key(n, client, room, open_clients)
            )
            for need in ranked[:excess]:
                chosen[need.task].remove(client)
    return chosen


def _release_key(
    need: Need, client: str, room: Mapping[str, int], open_clients: Sequence[str]
) -> tuple[bool, bool, bool, int, TaskId]:
    """Sort key of the tasks an over-quota client gives up first.

    Last come the tasks the client anchors, then those no client with room could take (they
    would have to go round through a third client). Otherwise a task is cheap to give up when a
    client with room is caught up on it (no learner needed), else when some client with room
    has much of its state, else when its changelog is short. Room counts before anything is
    given up, so the choice does not depend on the order in which clients are looked at.
    """
    anchored = need.anchor == client

    def takes(other: str) -> bool:
        return other not in need.claims and other not in need.forbidden

    for lag, other in need.lags.ranked:
        if room[other] > 0 and takes(other):
            return (anchored, False, not need.lags.can_host(lag), lag, need.task)
    stuck = not any(takes(other) for other in open_clients)
    return (anchored, stuck, not need.lags.unreported_can_host, need.lags.end, need.task)
