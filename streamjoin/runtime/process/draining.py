"""A warm scale-in: a worker told to stop (SIGTERM: a rolling deploy, a scale-in) first hands
its active tasks off, then leaves the group as before.

It says so in its subscription (draining) and rejoins. The leader then counts it as a member of
capacity 0 (assignment/tasks/): its stateless tasks move at once, a stateful one at once to a
caught-up standby, else it keeps running it while the new owner restores it as a learner; that
learner asks for the follow-up rebalance once caught up (tasks/followup.py), which moves the
task. Once the worker owns nothing it leaves the group at once, before the rest of its stop:
its peers' follow-up rebalance, which moves its last tasks, waits for it to join or leave. So no
task restores from scratch after it is gone and none pauses longer than a hand-off.

Bounded by the drain timeout (then it leaves as before, the tasks left restoring on their new
owners); cut short by a second stop. It leaves at once, without asking the group, when it is
alone in it (it led the last assignment, of its own members only) or runs no stateful task
(nothing to restore: its leaving moves them as fast); so ordinary stops are no slower. It
leaves at once too when the group cannot take it as draining: nobody else to hand to (every
worker stopping), a leader of an older version, or a host's other processes staying (they take
its tasks from the shared state directory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Self

from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.member import MemberState
from streamjoin.runtime.tasks.rebalances import RebalanceReason, RebalanceRecorder
from streamjoin.runtime.tasks.roles import WorkerRoles

__all__ = ("Drain",)

logger = logging.getLogger(__name__)


class Drain:
    def __init__(
        self,
        roles: WorkerRoles,
        *,
        owned: Callable[[], int],
        stateful: Callable[[], int],
        alone: Callable[[], bool],
        stable: Callable[[], bool],
        generation: Callable[[], int],
        request_rejoin: Callable[[str], None],
        leaving: Callable[[], None],
        leave: Callable[[], Awaitable[None]],
        timeout_s: float,
        interval_s: float = 0.05,
    ) -> None:
        """`owned()`: tasks the worker still runs or restores as an active, or partitions it
        still owns; `stateful()`: how many of them hold state; `alone()`: no other worker is
        in the group (as the last assignment this worker led says); `stable()`: the member is
        in a generation with its assignment applied; `leaving()`: tell the member that it will
        leave once it owns nothing; `leave()`: leave the group now (it owns nothing)."""
        self._roles = roles
        self._owned = owned
        self._stateful = stateful
        self._alone = alone
        self._stable = stable
        self._generation = generation
        self._request = request_rejoin
        self._leaving = leaving
        self._leave = leave
        self._timeout = timeout_s
        self._interval = interval_s
        self.outcome = ""
        """How it ended: handed off, timed out, refused, cut short (for the log and tests)."""

    @classmethod
    def of_worker(
        cls, recorder: RebalanceRecorder, consumer: CooperativeConsumer, timeout_s: float
    ) -> Self:
        """The drain of a worker's tasks (its actives, or else the partitions it owns), its
        rebalance asked for as `draining` in its history."""
        manager = recorder.manager
        roles = recorder.roles

        def leaving() -> None:
            consumer.member.leaving = True

        def request_rejoin(reason: str) -> None:
            recorder.asked(RebalanceReason.DRAINING)
            consumer.request_rejoin(reason)

        return cls(
            recorder.roles,
            owned=lambda: len(manager.active) or len(consumer.assignment()),
            stateful=lambda: sum(
                1 for t in manager.active if roles.topology.is_stateful(t.subtopology)
            ),
            alone=lambda: (
                consumer.member.is_leader
                and set(roles.assignor.last_members.values()) == {roles.process_id}
            ),
            stable=lambda: consumer.member.state is MemberState.STABLE,
            generation=lambda: consumer.generation,
            request_rejoin=request_rejoin,
            leaving=leaving,
            leave=consumer.member.close,
            timeout_s=timeout_s,
        )

    async def when_asked(self, asked: asyncio.Event, stopping: asyncio.Event) -> None:
        """Once `asked`, drain (unless `stopping` came first, or cuts it short), then stop."""
        await asked.wait()
        if not stopping.is_set():
            await self.run(stopping)
        stopping.set()

    async def run(self, cut_short: asyncio.Event) -> None:
        """Hand every active task off, or give up (timeout, `cut_short` set, not draining)."""
        started = time.monotonic()
        tasks = self._owned()
        if tasks == 0 or self._generation() < 0:
            self.outcome = "nothing to hand off"
            return
        if self._alone():
            self.outcome = "alone in the group"
            logger.info("stopping: no other worker in the group to hand %d tasks to", tasks)
            return
        if self._stateful() == 0:
            # Their new owners take them in the rebalance the leaving starts, one sooner.
            self.outcome = "no state to warm up"
            return
        self._roles.draining = True
        self._leaving()
        logger.info(
            "stopping: handing %d tasks off warm before leaving (at most %.0f s; stop again to "
            "leave at once)",
            tasks,
            self._timeout,
        )
        self._request(f"draining: handing {tasks} tasks off warm")
        deadline = started + self._timeout
        reported = -1
        while not cut_short.is_set():
            left = self._owned()
            answer = self._roles.drain_answer(self._generation()) if self._stable() else None
            if answer is False:
                self.outcome = "refused"
                logger.warning(
                    "stopping: the group did not take this worker as draining (no other worker "
                    "to hand to, a leader of an older version, or other processes of this host "
                    "stay); leaving with %d tasks now",
                    left,
                )
                return
            if left == 0 and self._roles.roles().draining:
                self.outcome = "handed off"
                logger.info(
                    "stopping: every task handed off warm in %.1f s", time.monotonic() - started
                )
                await self._leave()
                return
            if time.monotonic() >= deadline:
                self.outcome = "timed out"
                logger.warning(
                    "stopping: the drain timeout (%.0f s) passed with %d tasks still here; "
                    "leaving now, their new owners restore what they lack (raise "
                    "--drain-timeout to wait longer)",
                    self._timeout,
                    left,
                )
                return
            if left != reported and answer:
                reported = left
                logger.info("draining: %d tasks still here, their new owners warming up", left)
            with contextlib.suppress(TimeoutError):  # a second stop is seen at once
                async with asyncio.timeout(self._interval):
                    await cut_short.wait()
        self.outcome = "cut short"
        logger.info("stopping: drain cut short with %d tasks still here", self._owned())
