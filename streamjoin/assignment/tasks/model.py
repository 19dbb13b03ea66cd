"""The task assignor's plain data: tasks, clients and settings in; roles per client out.

The worker builds these from the group subscriptions (one `ClientState` per process, however
many consumers it runs) and hands them to `assign_tasks`; `plan_tasks` builds them from JSON.
Everything is immutable and validated on construction, so the assignor itself never has to
defend against malformed input.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Self

from streamjoin.errors import ConfigurationError

__all__ = (
    "RUNNING_ACTIVE",
    "AssignorSettings",
    "ClientAssignment",
    "ClientState",
    "PendingMove",
    "Role",
    "TaskAssignment",
    "TaskId",
    "TaskSpec",
    "Warmup",
    "best_offset_sum",
)

RUNNING_ACTIVE = -2
"""Offset sum a client reports for a task it runs as a caught-up active (Kafka's LATEST)."""

_TASK_ID = re.compile(r"(\d+)_(\d+)")


def best_offset_sum(known: int | None, reported: int) -> int:
    """Of two members' offset sums for one task (the processes of one host share their state
    directory): the running active's, else the furthest."""
    if known is None:
        return reported
    if RUNNING_ACTIVE in (known, reported):
        return RUNNING_ACTIVE
    return max(known, reported)


class TaskId(NamedTuple):
    """A task: one partition of one subtopology (a group of co-partitioned topics).

    A named tuple: the assignor hashes and sorts task ids by the hundred thousand.
    """

    subtopology: int
    partition: int

    @classmethod
    def parse(cls, text: str) -> Self:
        """Read the `<subtopology>_<partition>` form used in scenarios and logs, e.g. "0_3"."""
        match = _TASK_ID.fullmatch(text)
        if match is None:
            raise ConfigurationError(
                f"task id {text!r} is not <subtopology>_<partition> with two non-negative "
                'integers, e.g. "0_3"'
            )
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A task to assign. `end_offset_sum` is None for a stateless task (no changelog)."""

    task: TaskId
    end_offset_sum: int | None = None

    def __post_init__(self) -> None:
        if self.end_offset_sum is not None and self.end_offset_sum < 0:
            raise ConfigurationError(
                f"task {self.task}: changelog end offset sum {self.end_offset_sum} is negative"
            )

    @property
    def stateful(self) -> bool:
        return self.end_offset_sum is not None


@dataclass(frozen=True, slots=True)
class ClientState:
    """One process as the leader sees it when a rebalance starts.

    `offset_sums` holds, for every stateful task the process has local state for (assigned or
    not), the sum of its changelog offsets; `RUNNING_ACTIVE` for a task it runs as a caught-up
    active. A task without an entry has no local state.

    A `draining` client is stopping: it counts as capacity 0 (no task is placed on it), but
    keeps running its stateful actives until their new owners have caught up (a warm scale-in).
    """

    process_id: str
    capacity: int = 1
    previous_active: frozenset[TaskId] = frozenset()
    previous_standby: frozenset[TaskId] = frozenset()
    offset_sums: Mapping[TaskId, int] = field(default_factory=dict)
    draining: bool = False

    @property
    def weight(self) -> int:
        """Its share of tasks: its capacity, 0 while it drains."""
        return 0 if self.draining else self.capacity

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ConfigurationError(
                f"client {self.process_id!r}: capacity {self.capacity} must be at least 1"
            )
        both = self.previous_active & self.previous_standby
        if both:
            raise ConfigurationError(
                f"client {self.process_id!r}: task {min(both)} is both a previous active "
                "and a previous standby"
            )
        for task, offset in self.offset_sums.items():
            if offset < 0 and offset != RUNNING_ACTIVE:
                raise ConfigurationError(
                    f"client {self.process_id!r}: offset sum {offset} for task {task} must be "
                    f"a non-negative sum or {RUNNING_ACTIVE} (running active)"
                )


@dataclass(frozen=True, slots=True)
class AssignorSettings:
    """The three knobs of KIP-441, with Kafka Streams' names and defaults."""

    acceptable_recovery_lag: int = 10_000
    """Lag at or below which a client counts as caught up and may take the active at once."""
    max_warmup_replicas: int = 2
    """Learners (extra copies warming up) allowed in one assignment, over all tasks."""
    num_standby_replicas: int = 0
    """Hot standbys per stateful task (fewer when there are not enough clients)."""

    def __post_init__(self) -> None:
        if self.acceptable_recovery_lag < 0:
            raise ConfigurationError(
                f"acceptable_recovery_lag {self.acceptable_recovery_lag} must be at least 0"
            )
        if self.max_warmup_replicas < 1:
            raise ConfigurationError(
                f"max_warmup_replicas {self.max_warmup_replicas} must be at least 1, or tasks "
                "could never move to a client that lacks their state"
            )
        if self.num_standby_replicas < 0:
            raise ConfigurationError(
                f"num_standby_replicas {self.num_standby_replicas} must be at least 0"
            )


class Role(enum.Enum):
    ACTIVE = "active"
    STANDBY = "standby"


class Warmup(enum.Enum):
    """How the target of a pending move catches up in this assignment."""

    LEARNER = "learner"
    """As a learner: an extra copy, paid from the warm-up budget."""
    STANDBY = "standby"
    """As a standby: the task runs on a caught-up client the target has as a standby, and the
    target holds that standby role meanwhile. No extra copy, so no budget."""
    WAITING = "waiting"
    """Not yet: the warm-up budget is spent, a later rebalance starts it."""


@dataclass(frozen=True, slots=True)
class PendingMove:
    """A copy that belongs on `target` once `target` has caught up; `holder` keeps it meanwhile."""

    task: TaskId
    role: Role
    target: str
    holder: str
    warmup: Warmup


@dataclass(frozen=True, slots=True)
class ClientAssignment:
    """One client's tasks, each tuple sorted. Learners are standbys that are warming up."""

    active: tuple[TaskId, ...] = ()
    standby: tuple[TaskId, ...] = ()
    learner: tuple[TaskId, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskAssignment:
    """The assignor's answer: roles per client (every client present) and what is still moving."""

    clients: Mapping[str, ClientAssignment]
    pending: tuple[PendingMove, ...] = ()
    draining: frozenset[str] = frozenset()
    """Clients that drained in this assignment: moves off them learn outside the warm-up budget."""

    @property
    def followup(self) -> bool:
        """Whether a probing rebalance should follow, to promote learners or start waiting moves."""
        return bool(self.pending)

    def warming_up(self, client: str) -> frozenset[TaskId]:
        """Tasks `client` restores because a move is bound for it: its learners and the standby
        slots a move warms up in. Once all are within the acceptable lag, the next rebalance
        completes their moves, so the client asks for it then (not at the probing interval)."""
        return frozenset(
            move.task
            for move in self.pending
            if move.target == client and move.warmup is not Warmup.WAITING
        )
