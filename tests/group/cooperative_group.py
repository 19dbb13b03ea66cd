"""A group of CooperativeConsumers on one topic for tests/group/test_consumer.py: each member's
callbacks with a group-wide ledger (no partition has two owners), the consumption log they
feed, and a member in a process of its own (member_process.py) that a test can kill."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.listener import RebalanceListener

GROUP_TIMEOUTS: dict[str, int] = {
    "session_timeout_ms": 4_000,
    "heartbeat_interval_ms": 400,
    "rebalance_timeout_ms": 4_000,
}

STATIC_TIMEOUTS: dict[str, int] = {
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 1_000,
    "rebalance_timeout_ms": 10_000,
}


class Events(RebalanceListener):
    """Callbacks of one consumer, plus a group-wide ledger: no partition has two owners."""

    def __init__(
        self,
        name: str,
        ledger: dict[TopicPartition, str],
        violations: list[str],
    ) -> None:
        self.name = name
        self.ledger = ledger
        self.violations = violations
        self.assigned: list[frozenset[TopicPartition]] = []
        self.revoked: set[TopicPartition] = set()
        self.lost: set[TopicPartition] = set()
        self.generation: Callable[[], int] = lambda: -1
        self.done_generation = -1
        """The generation whose callbacks have all run: `on_assigned` comes last in each, also
        when nothing is added. A member is stable in its new generation from the SyncGroup answer,
        still owning what it is revoking until `on_revoked` returns."""
        self.revoking_takes = 0.0

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.done_generation = self.generation()
        for tp in partitions:
            if tp in self.ledger:  # recorded, not asserted: the member logs callback errors
                self.violations.append(f"{tp} given to {self.name} while {self.ledger[tp]} owns it")
            self.ledger[tp] = self.name
        self.assigned.append(partitions)

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        await asyncio.sleep(self.revoking_takes)
        self.revoked |= partitions
        self._release(partitions)

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.lost |= partitions
        self._release(partitions)

    def _release(self, partitions: frozenset[TopicPartition]) -> None:
        for tp in partitions:
            if self.ledger.get(tp) == self.name:
                del self.ledger[tp]


class _Offset:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class Group:
    """Consumers of one group and topic, each read by a task into the consumption log."""

    def __init__(
        self,
        stack: AsyncExitStack,
        broker: Broker,
        *,
        topic: str,
        group: str,
        log: Any,
        wait_until: Any,
    ) -> None:
        self.stack = stack
        self.wait_until = wait_until
        self.broker = broker
        self.topic = topic
        self.group = group
        self.log = log
        self.ledger: dict[TopicPartition, str] = {}
        self.violations: list[str] = []
        self.consumers: dict[str, CooperativeConsumer] = {}
        self.events: dict[str, Events] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.stops: dict[str, asyncio.Event] = {}

    async def add(self, name: str, assignors: Sequence[str], **options: Any) -> CooperativeConsumer:
        events = Events(name, self.ledger, self.violations)
        consumer = CooperativeConsumer(
            self.topic,
            bootstrap_servers=self.broker.bootstrap,
            group_id=self.group,
            assignors=assignors,
            listener=events,
            auto_offset_reset="earliest",
            auto_commit_interval_ms=500,
            **{**GROUP_TIMEOUTS, **options},
        )
        events.generation = lambda: consumer.member.generation
        await consumer.start()
        self.stack.push_async_callback(consumer.stop)
        self.consumers[name] = consumer
        self.events[name] = events
        stop = self.stops[name] = asyncio.Event()
        self.tasks[name] = asyncio.create_task(self.log.consume(consumer, name, stop))
        return consumer

    async def remove(self, name: str) -> None:
        """Stop reading from `name` and stop it (a clean shutdown: it leaves the group)."""
        self.stops[name].set()
        await self.tasks.pop(name)
        await self.consumers.pop(name).stop()

    def settled(self, partitions: int, names: Sequence[str]) -> Callable[[], bool]:
        """`names` own every partition between them, each stable with its callbacks run, none
        about to rejoin."""

        def check() -> bool:
            members = [self.consumers[n].member for n in names]
            done = [self.events[n].done_generation for n in names]
            owned = [tp for m in members for tp in m.assignment]
            return (
                len(owned) == len(set(owned)) == partitions
                and all(m.state.value == "stable" and m._rejoin_reason is None for m in members)
                and len({m.generation for m in members}) == 1
                and done == [m.generation for m in members]
            )

        return check

    async def settle(self, partitions: int, names: Sequence[str], within: float = 60) -> None:
        await self.wait_until(self.settled(partitions, names), within)

    async def drain(self, produced: Sequence[int], within: float = 30) -> None:
        """Wait until every produced record was delivered, then stop reading."""
        await self.wait_until(lambda: not self.log.missing(self.topic, produced), within)
        await self.stop_reading()

    async def drain_with(self, produced: Sequence[int], elsewhere: set[tuple[int, int]]) -> None:
        """`drain`, counting records another process reported as consumed."""
        for p, offset in elsewhere:
            self.log.record("elsewhere", -1, {TopicPartition(self.topic, p): [_Offset(offset)]})
        await self.drain(produced)

    async def stop_reading(self) -> None:
        for stop in self.stops.values():
            stop.set()
        await asyncio.gather(*self.tasks.values())


class VictimReport:
    """Reads the JSON lines of tests/group/member_process.py."""

    @classmethod
    async def spawn(
        cls, broker: Broker, group: Group, assignor: str, timeouts: dict[str, int]
    ) -> VictimReport:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(Path(__file__).with_name("member_process.py")),
            broker.bootstrap,
            group.group,
            group.topic,
            assignor,
            str(timeouts["session_timeout_ms"]),
            str(timeouts["heartbeat_interval_ms"]),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process)

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.owned: set[int] = set()
        self.consumed: set[tuple[int, int]] = set()

    async def _next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        assert line, "the member process exited"
        event: dict[str, Any] = json.loads(line)
        if event["event"] == "assigned":
            self.owned |= set(event["partitions"])
        elif event["event"] in ("revoked", "lost"):
            self.owned -= set(event["partitions"])
        elif event["event"] == "records":
            first, last = event["offsets"]
            self.consumed |= {(event["partition"], o) for o in range(first, last + 1)}
        return event

    async def wait_for(self, kind: str) -> dict[str, Any]:
        while (event := await self._next())["event"] != kind:
            pass
        return event

    async def wait_until_owns(self, count: int) -> None:
        while len(self.owned) != count:
            await self._next()

    def keep_reading(self) -> None:
        """Read the rest of the output in the background (records consumed until it dies)."""
        self.reader = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        with contextlib.suppress(AssertionError):
            while True:
                await self._next()
