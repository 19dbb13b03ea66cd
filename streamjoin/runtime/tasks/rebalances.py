"""A worker's recent rebalances as it saw them, for `/status` and the metrics: when, why, which
of its tasks changed role, and for each task that became active here how long its output
paused.

- Why: what this worker knows. Its own first join (member-joined), its own request for a
  rebalance (follow-up: after revoking cooperatively, or its warm-ups caught up; probing), a
  rejoin after losing its membership (rejoined), and, on the leader, members it did not see in
  the previous generation (member-joined) or a previous leader or members gone (member-left).
  Otherwise another member started it (group): `streamjoin status` merges what every worker
  says of one generation. A worker told to stop asks for one to hand its tasks off warm
  (draining).
- Output pause of a task that became active here: from the moment its old owner stopped (the
  end of the rebalance that took it away; the start of this worker's rebalance when the task
  had no owner left, as when one leaves) to the first record this worker processed of it.

Off the per-record path: roles are compared once per rebalance, in the listener, and the
pauses are found by a look at the waiting tasks' input positions (`check_pauses`, called a few
times a second), only while some are waiting.
"""

from __future__ import annotations

import enum
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.listener import RebalanceListener
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.tasks.roles import Roles, WorkerRoles
from streamjoin.runtime.topology.app_topology import TaskId

__all__ = ("MemberView", "Rebalance", "RebalanceReason", "RebalanceRecorder")

KEPT = 20
"""Rebalances kept per worker."""
_PAUSE_GIVEN_UP_S = 600.0
"""A task that processed nothing this long after it moved here (an idle input) is no longer
waited on: its pause stays unknown."""


class RebalanceReason(enum.StrEnum):
    MEMBER_JOINED = "member-joined"
    MEMBER_LEFT = "member-left"
    FOLLOW_UP = "follow-up"
    PROBING = "probing"
    REJOINED = "rejoined"
    DRAINING = "draining"
    """A worker told to stop hands its tasks off warm (runtime/process/draining.py)."""
    GROUP = "group"
    """Started by another member: its reason is in its own history."""


class MemberView(Protocol):
    """What the recorder reads of the group member (group/member.py's GroupMember)."""

    member_id: str
    generation: int
    is_leader: bool
    rebalance_started_at: float
    """time.time() when the member's latest rebalance began."""


@dataclass(slots=True)
class Rebalance:
    generation: int
    at_ms: int
    """When the assignment arrived (epoch ms)."""
    reasons: set[RebalanceReason]
    moved: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Task -> (role before, role after): active, standby, learner or None."""
    pauses_s: dict[str, float] = field(default_factory=dict)
    """Tasks that became active here -> seconds their output paused (once known)."""
    took_s: float = 0.0
    """From the start of this worker's rebalance to its assignment."""

    def as_json(self) -> dict[str, object]:
        return {
            "generation": self.generation,
            "at_ms": self.at_ms,
            "reasons": sorted(self.reasons),
            "moved": {task: list(change) for task, change in sorted(self.moved.items())},
            "pauses_s": {task: round(s, 3) for task, s in sorted(self.pauses_s.items())},
            "took_s": round(self.took_s, 3),
        }


@dataclass(slots=True)
class _Waiting:
    task: TaskId
    since: float
    entry: Rebalance


def _role_of(roles: Roles) -> dict[TaskId, str]:
    found = dict.fromkeys(roles.standby, "standby")
    found.update(dict.fromkeys(roles.learner, "learner"))
    found.update(dict.fromkeys(roles.active, "active"))
    return found


class RebalanceRecorder(RebalanceListener):
    """The task manager's group listener, with the bookkeeping of each rebalance around it."""

    def __init__(
        self,
        manager: TaskManager,
        roles: WorkerRoles,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.manager = manager
        self.roles = roles
        self._clock = clock
        self.member: MemberView | None = None
        """Set once the group member exists (it is built with this listener)."""
        self.history: deque[Rebalance] = deque(maxlen=KEPT)
        self.joined_at_ms: int | None = None
        """When this member got its first assignment (None before; anew after a rejoin)."""
        self.reasons: Counter[RebalanceReason] = Counter()
        self.handoffs = 0
        self.handoff_pause_s = 0.0
        """Sum of the pauses measured (the metrics' mean pause: sum over count)."""
        self._asked: set[RebalanceReason] = set()
        self._revoked = False
        """Partitions were revoked in this rebalance: the member asks for a follow-up at once."""
        self._before: dict[TaskId, str] = {}
        self._member_id = ""
        self._was_leader = False
        self._members: dict[str, str] = {}
        """Leader: member id -> process id in the generation it assigned last."""
        self._waiting: dict[TaskId, _Waiting] = {}

    def asked(self, reason: RebalanceReason) -> None:
        """This worker asked for the next rebalance (follow-up, probing)."""
        self._asked.add(reason)

    # -- the manager's callbacks, with what they tell --------------------------------------------

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        await self.manager.on_assigned(partitions)
        self._record()

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        await self.manager.on_revoked(partitions)
        self._revoked = self._revoked or bool(partitions)

    def on_joined(self) -> None:
        self.manager.on_joined()

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        await self.manager.on_lost(partitions)
        self._asked.add(RebalanceReason.REJOINED)

    # -- bookkeeping ----------------------------------------------------------------------------

    def _record(self) -> None:
        member = self.member
        if member is None:
            return
        now = self._clock()
        reasons = self._reasons(member)
        self._asked = {RebalanceReason.FOLLOW_UP} if self._revoked else set()
        self._revoked = False
        entry = Rebalance(member.generation, int(now * 1000), reasons)
        entry.took_s = max(0.0, now - member.rebalance_started_at)
        after = _role_of(self.roles.roles())
        for task in sorted(self._before.keys() | after.keys(), key=str):
            change = (self._before.get(task), after.get(task))
            if change[0] != change[1]:
                entry.moved[self._named(task)] = change
            if change[1] == "active" and change[0] != "active" and self.joined_at_ms is not None:
                # Partitions here at once: the task had no owner left when this rebalance began.
                since = member.rebalance_started_at if task in self.manager.active else now
                self._waiting[task] = _Waiting(task, since, entry)
            elif change[1] != "active":
                self._waiting.pop(task, None)
        self._before = after
        if self.joined_at_ms is None:
            self.joined_at_ms = entry.at_ms
        self.reasons.update(reasons)
        self.history.append(entry)
        self.check_pauses()

    def _reasons(self, member: MemberView) -> set[RebalanceReason]:
        reasons = set(self._asked)
        if member.member_id != self._member_id:
            new_member = not self._member_id
            self._member_id, self.joined_at_ms = member.member_id, None
            reasons.add(RebalanceReason.MEMBER_JOINED if new_member else RebalanceReason.REJOINED)
        if member.is_leader:
            members = dict(self.roles.assignor.last_members)
            if self._members and members.keys() - self._members.keys():
                reasons.add(RebalanceReason.MEMBER_JOINED)
            if (self._members and self._members.keys() - members.keys()) or (
                not self._was_leader and self.history
            ):
                reasons.add(RebalanceReason.MEMBER_LEFT)  # a leader changes when it leaves
            self._members = members
        self._was_leader = member.is_leader
        return reasons or {RebalanceReason.GROUP}

    def _named(self, task: TaskId) -> str:
        """The task as the group's metadata names it ("0_3")."""
        return str(self.roles.topology.to_assignment(task))

    def check_pauses(self) -> None:
        """Measure the pause of each waiting task that has processed a record by now."""
        if not self._waiting:
            return
        now = self._clock()
        for task, waiting in list(self._waiting.items()):
            active = self.manager.active.get(task)
            running = active.running if active is not None else None
            if running is not None and running.positions():
                pause = now - waiting.since
                waiting.entry.pauses_s[self._named(task)] = pause
                self.handoffs += 1
                self.handoff_pause_s += pause
                del self._waiting[task]
            elif now - waiting.since > _PAUSE_GIVEN_UP_S:
                del self._waiting[task]
