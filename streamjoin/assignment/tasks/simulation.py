"""A cluster simulated across rebalances, with ideal restores between them.

Models Kafka's TaskAssignorConvergenceTest harness: between two rebalances every client catches
up completely on each task it was given (active, standby or learner) and keeps that state on
disk, including while it is stopped. The benchmark and the tests use it to count rebalances to
convergence and task moves, for streamjoin's assignor and for the round-robin baseline alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from streamjoin.assignment.tasks.model import (
    AssignorSettings,
    ClientAssignment,
    ClientState,
    TaskAssignment,
    TaskId,
    TaskSpec,
)

__all__ = ("AssignFunction", "Cluster", "NotConvergedError", "clients_named", "kafka_tasks")

AssignFunction = Callable[
    [Sequence[ClientState], Sequence[TaskSpec], AssignorSettings], TaskAssignment
]


class NotConvergedError(AssertionError):
    """The assignor still asked for a follow-up after the allowed number of rebalances."""


@dataclass(slots=True)
class _Member:
    capacity: int
    last: ClientAssignment = field(default_factory=ClientAssignment)
    draining: bool = False


class Cluster:
    """Live and stopped clients, what each was last given, and the moves made so far."""

    def __init__(
        self,
        tasks: Sequence[TaskSpec],
        settings: AssignorSettings,
        assign: AssignFunction,
    ) -> None:
        self.tasks = list(tasks)
        self.settings = settings
        self.assign = assign
        self._ends = {spec.task: spec.end_offset_sum for spec in tasks if spec.stateful}
        self.live: dict[str, _Member] = {}
        self.stopped: dict[str, _Member] = {}
        self.owners: dict[TaskId, str] = {}
        """The stateful tasks' active owners after the latest rebalance."""
        self.moves = 0
        """Stateful actives that changed owner (or lost theirs) over all rebalances."""
        self.rebalances = 0
        self.history: list[TaskAssignment] = []

    def add(self, client: str, capacity: int = 1) -> None:
        """Start a client: a stopped one comes back with its state, a new one has none."""
        member = self.stopped.pop(client, None)
        self.live[client] = member if member is not None else _Member(capacity)

    def stop(self, client: str) -> None:
        self.stopped[client] = self.live.pop(client)
        self.stopped[client].draining = False

    def drain(self, client: str) -> None:
        """The client is stopping: it hands its tasks off warm before `stop`."""
        self.live[client].draining = True

    def states(self) -> list[ClientState]:
        """What the live clients report when the next rebalance starts."""
        states = []
        for client, member in self.live.items():
            last = member.last
            held = set(last.active) | set(last.standby) | set(last.learner)
            offsets = {task: end for task in held if (end := self._ends.get(task)) is not None}
            states.append(
                ClientState(
                    client,
                    member.capacity,
                    frozenset(last.active),
                    frozenset(last.standby) | frozenset(last.learner),
                    offsets,
                    member.draining,
                )
            )
        return states

    def rebalance(self) -> TaskAssignment:
        """Run one assignment over the live clients and record it."""
        assignment = self.assign(self.states(), self.tasks, self.settings)
        self.rebalances += 1
        self.history.append(assignment)
        owners: dict[TaskId, str] = {}
        for client, roles in assignment.clients.items():
            self.live[client].last = roles
            owners.update((task, client) for task in roles.active if task in self._ends)
        self.moves += sum(
            1 for task, owner in self.owners.items() if owners.get(task, owner) != owner
        )
        self.owners = owners
        return assignment

    def converge(self, limit: int) -> int:
        """Rebalance until no follow-up is asked for; the number of rebalances it took."""
        for done in range(1, limit + 1):
            if not self.rebalance().followup:
                return done
        raise NotConvergedError(f"still asking for a follow-up after {limit} rebalances")


def kafka_tasks(
    stateless: int,
    stateful: int,
    partitions: Callable[[], int] | int,
    end_offset: Callable[[TaskId], int] | int = 150_000,
) -> list[TaskSpec]:
    """Tasks laid out as Kafka's convergence test does: stateless subtopologies first.

    Each subtopology has `partitions` tasks (or what is left), and every stateful task an end
    offset sum of 150,000 unless told otherwise.
    """
    specs: list[TaskSpec] = []
    subtopology = 0
    for count, is_stateful in ((stateless, False), (stateful, True)):
        remaining = count
        while remaining > 0:
            size = min(remaining, partitions() if callable(partitions) else partitions)
            for partition in range(size):
                task = TaskId(subtopology, partition)
                end = end_offset(task) if callable(end_offset) else end_offset
                specs.append(TaskSpec(task, end if is_stateful else None))
            remaining -= size
            subtopology += 1
    return specs


def clients_named(count: int, start: int = 0) -> Iterable[str]:
    """Client ids that sort in numeric order, like Kafka's UUIDs built from integers."""
    return (f"c{index:04d}" for index in range(start, start + count))
