"""How a drain ends (runtime/process/draining.py): handed off once the group took the worker as
draining and it owns nothing; at once when the group refuses it; at the timeout; when cut short.
The group's side is simulated by the callables a worker passes (the e2e test runs it for real:
tests/runtime/e2e/test_drain.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from streamjoin.runtime.process.draining import Drain
from streamjoin.runtime.tasks.roles import Roles


@dataclass
class Group:
    """What the worker sees of its group: its tasks, its generation, what it was told."""

    owned: int = 2
    stateful: int = 2
    """Stateful tasks among them (what a warm hand-off spares a restore)."""
    alone: bool = False
    generation: int = 4
    stable: bool = True
    told_draining: bool | None = None
    """The answer to a draining subscription (None: not in yet)."""
    rejoins: list[str] = field(default_factory=list)
    leaving: bool = False
    left_owning: int | None = None
    """What it owned when it left the group (None: it did not leave during the drain)."""
    draining: bool = False

    async def leave(self) -> None:
        self.left_owning = self.owned

    def roles(self) -> Roles:
        return Roles(draining=bool(self.told_draining))

    def drain_answer(self, generation: int) -> bool | None:
        assert generation == self.generation
        return self.told_draining


def drain(group: Group, timeout_s: float = 30, interval_s: float = 0.01) -> Drain:
    return Drain(
        group,  # type: ignore[arg-type]
        owned=lambda: group.owned,
        stateful=lambda: group.stateful,
        alone=lambda: group.alone,
        stable=lambda: group.stable,
        generation=lambda: group.generation,
        request_rejoin=group.rejoins.append,
        leaving=lambda: setattr(group, "leaving", True),
        leave=group.leave,
        timeout_s=timeout_s,
        interval_s=interval_s,
    )


async def test_hands_off_once_taken_as_draining_and_owning_nothing() -> None:
    group = Group()
    draining = drain(group)
    running = asyncio.create_task(draining.run(asyncio.Event()))
    await asyncio.sleep(0.05)
    assert group.draining and group.leaving
    assert group.rejoins == ["draining: handing 2 tasks off warm"]
    group.told_draining = True  # the leader's answer: the tasks move while the worker runs them
    await asyncio.sleep(0.05)
    assert not running.done()
    assert group.left_owning is None
    group.owned = 0
    await asyncio.wait_for(running, 5)
    assert draining.outcome == "handed off"
    # it left the group then, not later in its stop: its peers' follow-up waited for that
    assert group.left_owning == 0


async def test_leaves_at_once_when_the_group_does_not_take_it_as_draining() -> None:
    group = Group(told_draining=False)
    draining = drain(group)
    await asyncio.wait_for(draining.run(asyncio.Event()), 5)
    assert draining.outcome == "refused" and group.owned == 2
    assert group.left_owning is None  # its stop revokes its tasks, then leaves


async def test_an_answer_read_while_rebalancing_is_not_taken() -> None:
    group = Group(told_draining=False, stable=False)
    draining = drain(group, timeout_s=0.1)
    await asyncio.wait_for(draining.run(asyncio.Event()), 5)
    assert draining.outcome == "timed out"


async def test_a_second_stop_cuts_it_short() -> None:
    group, cut = Group(), asyncio.Event()
    draining = drain(group)
    running = asyncio.create_task(draining.run(cut))
    await asyncio.sleep(0.05)
    cut.set()
    await asyncio.wait_for(running, 5)
    assert draining.outcome == "cut short"


async def test_a_second_stop_is_seen_at_once_not_at_the_next_check() -> None:
    """The worker's loop ends on the same stop and then cancels the drain: the drain must have
    said "cut short" by then (tests/runtime/e2e/test_drain.py missed that line once)."""
    group, cut = Group(), asyncio.Event()
    draining = drain(group, interval_s=60.0)  # its own checks come far too late
    running = asyncio.create_task(draining.run(cut))
    await asyncio.sleep(0.05)
    cut.set()
    for _ in range(3):
        await asyncio.sleep(0)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    assert draining.outcome == "cut short"


async def test_nothing_to_hand_off_before_the_first_assignment() -> None:
    group = Group(generation=-1)
    draining = drain(group)
    await asyncio.wait_for(draining.run(asyncio.Event()), 5)
    assert draining.outcome == "nothing to hand off" and not group.rejoins


async def test_a_worker_alone_in_its_group_leaves_at_once_without_a_rebalance() -> None:
    """Nobody to hand to: asking the group would only delay the stop by a rebalance."""
    group = Group(alone=True)
    draining = drain(group)
    await asyncio.wait_for(draining.run(asyncio.Event()), 5)
    assert draining.outcome == "alone in the group"
    assert not group.rejoins and not group.draining and not group.leaving


async def test_a_worker_with_only_stateless_tasks_leaves_at_once_without_a_rebalance() -> None:
    """Stateless tasks restore nothing: their new owners take them in the rebalance that the
    worker's leaving starts, one rebalance sooner than through a drain."""
    group = Group(stateful=0)
    draining = drain(group)
    await asyncio.wait_for(draining.run(asyncio.Event()), 5)
    assert draining.outcome == "no state to warm up"
    assert not group.rejoins and not group.draining and not group.leaving
