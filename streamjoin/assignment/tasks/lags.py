"""Lag of every client on every stateful task, and who may therefore host the task's active.

Only clients that report local state for a task are listed; every other client has the full
restore ahead of it (lag = end offset sum). That keeps the work proportional to the state that
exists, not to clients x tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamjoin.assignment.tasks.model import RUNNING_ACTIVE, ClientState, TaskId, TaskSpec

__all__ = ("TaskLags", "compute_lags", "stateless_lags")


@dataclass(frozen=True, slots=True)
class TaskLags:
    """How far each client is from one task's changelog end."""

    end: int
    """Lag of a client without local state: the whole changelog."""
    reported: Mapping[str, int]
    """Lag of every client reporting local state."""
    ranked: tuple[tuple[int, str], ...]
    """(lag, client) of every client reporting local state, most caught-up first."""
    best: int
    """Smallest lag over all clients, reporting or not."""
    acceptable: int
    total_clients: int

    @property
    def caught_up_exists(self) -> bool:
        return self.best <= self.acceptable

    def lag(self, client: str) -> int:
        return self.reported.get(client, self.end)

    def can_host(self, lag: int) -> bool:
        """Whether a client with this lag may run the active now.

        A caught-up client (lag within the acceptable recovery lag) always may; while nobody is
        caught up, only the least lagging clients may, so the task restores as little as it can.
        """
        if self.caught_up_exists:
            return lag <= self.acceptable
        return lag == self.best

    @property
    def unreported_can_host(self) -> bool:
        """Whether a client without local state may run the active now."""
        return self.can_host(self.end)

    def hosts(self) -> list[str]:
        """Reporting clients that may run the active now, most caught-up first."""
        return [client for lag, client in self.ranked if self.can_host(lag)]

    def host_count(self) -> int:
        """How many clients, reporting or not, may run the active now."""
        reporting = sum(1 for lag, _ in self.ranked if self.can_host(lag))
        if self.unreported_can_host:
            return reporting + self.total_clients - len(self.ranked)
        return reporting


def _lag(end: int, offset_sum: int) -> int:
    if offset_sum == RUNNING_ACTIVE:
        return 0
    if offset_sum > end:
        # Local state ahead of the changelog (topic recreated, log truncated): untrustworthy,
        # so it counts as no state at all.
        return end
    return end - offset_sum


def compute_lags(
    tasks: Iterable[TaskSpec], clients: Iterable[ClientState], acceptable: int
) -> dict[TaskId, TaskLags]:
    """Lags of every client on every stateful task."""
    client_list = list(clients)
    reports: dict[TaskId, list[tuple[int, str]]] = {}
    ends = {spec.task: spec.end_offset_sum for spec in tasks if spec.end_offset_sum is not None}
    for client in client_list:
        for task, offset_sum in client.offset_sums.items():
            end = ends.get(task)
            if end is not None:
                reports.setdefault(task, []).append((_lag(end, offset_sum), client.process_id))
    lags: dict[TaskId, TaskLags] = {}
    for task, end in ends.items():
        ranked = tuple(sorted(reports.get(task, ())))
        seen = [lag for lag, _ in ranked]
        if len(ranked) < len(client_list):
            seen.append(end)
        best = min(seen, default=end)
        reported = {client: lag for lag, client in ranked}
        lags[task] = TaskLags(end, reported, ranked, best, acceptable, len(client_list))
    return lags


def stateless_lags(total_clients: int) -> TaskLags:
    """The lags of a task without state: every client is as good as any other."""
    return TaskLags(0, {}, (), 0, 0, total_clients)
