"""Ask for the follow-up rebalance as soon as every warm-up on this worker has caught up (KIP-441;
docs/rebalancing.md), instead of waiting for the probing interval, which stays as the fallback. A
warm-up is a learner, or a standby that a move to this worker warms up in (the task runs on a worker
that had it as a standby meanwhile): both complete a move once caught up.

Never during a rebalance, and never in a loop: if the group answers a request with the same
learners again (a learner whose input outruns its restore falls behind before the leader looks),
the next request waits twice as long, up to the probing interval, and the log says so.

A worker told to run tasks whose partitions the cooperative step still withholds (their old
owner revokes them now) rejoins at once too, rather than when its next heartbeat hears of the
old owner's rejoin: that wait was a good part of a moved task's pause. Once per set of such
tasks, so that a group that withholds them again does not rebalance in a loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from streamjoin.runtime.tasks.rebalances import RebalanceReason
from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager

__all__ = ("FollowupTrigger",)

logger = logging.getLogger(__name__)

_FIRST_BACKOFF_S = 2.0


class FollowupTrigger:
    def __init__(
        self,
        roles: WorkerRoles,
        state: StateManager,
        *,
        acceptable_recovery_lag: int,
        stable: Callable[[], bool],
        generation: Callable[[], int],
        request_rejoin: Callable[[str], None],
        max_backoff_s: float,
        interval_s: float = 0.25,
        asked: Callable[[RebalanceReason], None] = lambda reason: None,
    ) -> None:
        """`asked(reason)`: told of each request (the worker's history of rebalances)."""
        self._roles = roles
        self._state = state
        self._acceptable = acceptable_recovery_lag
        self._stable = stable
        self._generation = generation
        self._request = request_rejoin
        self._max_backoff = max_backoff_s
        self._interval = interval_s
        self._told = asked
        self._asked: tuple[int, frozenset[TaskId]] | None = None
        """(generation, warm-ups) of the last request."""
        self._backoff = 0.0
        self._quiet_until = 0.0
        self._penalised: int | None = None
        """Generation in which the current backoff started."""
        self._probed: int | None = None
        self._withheld: frozenset[TaskId] = frozenset()
        self.requests = 0

    async def run(self, *, catch_up: bool = True) -> None:
        """Look four times a second; `catch_up=False` only keeps the probing interval."""
        while True:
            await asyncio.sleep(self._interval)
            if self._stable():
                self.check(time.monotonic(), time.time() * 1000, catch_up=catch_up)

    def caught_up(self, warmups: frozenset[TaskId]) -> bool:
        for task_id in warmups:
            task = self._state.task(str(task_id))
            lag = task.lag() if task is not None else None
            if lag is None or lag > self._acceptable:
                return False
        return True

    def check(self, now: float, now_ms: float, *, catch_up: bool = True) -> None:
        """One look (the member is stable): request a rebalance if the time has come."""
        warmups = self._roles.roles().warmup
        probe = self._roles.next_probe_ms
        if probe is not None and now_ms >= probe and self._probed != probe:
            self._probed = probe
            self._ask(
                "probing rebalance: the assignment asked for one", warmups, RebalanceReason.PROBING
            )
            return
        if not catch_up or not warmups or now < self._quiet_until:
            return
        if not self.caught_up(warmups):
            return
        generation = self._generation()
        if self._asked is not None:
            asked_generation, asked_warmups = self._asked
            if asked_generation == generation:
                return  # already asked in this generation
            if asked_warmups == warmups and self._penalised != generation:
                # The last request was answered with the same warm-ups: back off.
                self._penalised = generation
                self._backoff = min(max(self._backoff * 2, _FIRST_BACKOFF_S), self._max_backoff)
                self._quiet_until = now + self._backoff
                logger.warning(
                    "warm-ups %s were caught up but not promoted (they fell behind again?); "
                    "asking again in %.0f s",
                    ", ".join(map(str, sorted(warmups))),
                    self._backoff,
                )
                return
            if asked_warmups != warmups:
                self._backoff = 0.0
        caught_up = ", ".join(map(str, sorted(warmups)))
        self._ask(f"warm-ups caught up: {caught_up}", warmups, RebalanceReason.FOLLOW_UP)

    def withheld(self, tasks: frozenset[TaskId]) -> None:
        """After an assignment: `tasks` are this worker's now, their partitions still withheld."""
        if tasks and tasks != self._withheld:
            self.requests += 1
            self._told(RebalanceReason.FOLLOW_UP)
            self._request(f"follow-up: {len(tasks)} tasks assigned here wait for their partitions")
        self._withheld = tasks

    def _ask(self, text: str, warmups: frozenset[TaskId], reason: RebalanceReason) -> None:
        self._asked = (self._generation(), warmups)
        self.requests += 1
        self._told(reason)
        self._request(text)
