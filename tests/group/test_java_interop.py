"""Kafka's own Java consumer (CooperativeStickyAssignor) and streamjoin's CooperativeConsumer in
one group on protocol "cooperative-sticky", on Apache Kafka: each leads in turn, no partition is
ever owned by two members, nothing is lost, and how many join rounds each needs is printed.

The Java member (tests/group/java/CooperativeMember.java) is compiled here with `javac` against
the kafka-clients jars of `make kafka-jars`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.broker.kafka_jars import kafka_classpath
from streamjoin.group import CooperativeConsumer, RebalanceListener
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

SOURCE = Path(__file__).resolve().parent / "java" / "CooperativeMember.java"
PARTITIONS = 6

Ownership = dict[int, list[tuple[str, float, float | None]]]
"""Per partition: (member, owned from ms, owned until ms or None)."""


@pytest.fixture(scope="module")
def java_member_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    javac = shutil.which("javac")
    assert javac, "the Java interop test needs a JDK 17+ (javac): apt-get install openjdk-17-jdk"
    out = tmp_path_factory.mktemp("java-member")
    subprocess.run(
        [javac, "-d", str(out), "-cp", kafka_classpath(), str(SOURCE)],
        check=True,
        timeout=300,
    )
    return out


class Timeline:
    """Who owned which partition when, and which values each member consumed."""

    def __init__(self) -> None:
        self.owners: Ownership = {p: [] for p in range(PARTITIONS)}
        self.consumed: set[str] = set()
        self.rounds: dict[str, int] = {}
        self.led: set[str] = set()

    def assigned(self, member: str, partitions: set[int], at_ms: float) -> None:
        self.rounds[member] = self.rounds.get(member, 0) + 1
        for p in partitions:
            self.owners[p].append((member, at_ms, None))

    def released(self, member: str, partitions: set[int], at_ms: float) -> None:
        for p in partitions:
            spans = self.owners[p]
            for i, (owner, since, until) in enumerate(spans):
                if owner == member and until is None:
                    spans[i] = (owner, since, at_ms)

    def owned_now(self, member: str) -> set[int]:
        return {
            p
            for p, spans in self.owners.items()
            if any(o == member and u is None for o, _, u in spans)
        }

    def double_owners(self) -> list[str]:
        """Partitions whose ownership spans overlap (a member's span ends before the next's)."""
        found = []
        for p, spans in self.owners.items():
            ordered = sorted(spans, key=lambda s: s[1])
            for (a, _, until), (b, since, _) in itertools.pairwise(ordered):
                if until is None or until > since:
                    found.append(f"partition {p}: {a} until {until}, {b} from {since}")
        return found


class JavaMember:
    """The Java consumer as a child process; its event lines feed the timeline."""

    def __init__(self, classes: Path, broker: Broker, topic: str, group: str, name: str) -> None:
        self.name = name
        self.command = ["java", "-Xmx128m", "-cp", f"{classes}:{kafka_classpath()}"]
        self.command += ["CooperativeMember", broker.bootstrap, topic, group, name]
        self.process: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None
        self.log: list[str] = []

    async def start(self, timeline: Timeline) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self.reader = asyncio.create_task(self._read(timeline))

    async def _read(self, timeline: Timeline) -> None:
        assert self.process is not None and self.process.stdout is not None
        async for raw in self.process.stdout:
            line = raw.decode().strip()
            self.log.append(line)
            at, event, *rest = line.split(" ", 2)
            if not at.isdigit():  # the JVM's own output (an exception)
                continue
            parts = (
                {int(p) for p in rest[0].split(",") if p} if rest and event != "record" else set()
            )
            if event == "assigned":
                timeline.assigned(self.name, parts, float(at))
            elif event in ("revoked", "lost"):
                timeline.released(self.name, parts, float(at))
            elif event == "leader":
                timeline.led.add(self.name)
            elif event == "record":
                timeline.consumed.add(rest[0].split(" ", 2)[2])

    async def stop(self) -> None:
        """Close stdin: the member commits, leaves the group and exits."""
        if self.process is None:
            return
        assert self.process.stdin is not None
        self.process.stdin.close()
        await asyncio.wait_for(self.process.wait(), 60)
        if self.reader is not None:
            await self.reader


class Recorder(RebalanceListener):
    def __init__(self, name: str, timeline: Timeline) -> None:
        self.name, self.timeline = name, timeline

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.timeline.assigned(self.name, {tp.partition for tp in partitions}, time.time() * 1000)

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self.timeline.released(self.name, {tp.partition for tp in partitions}, time.time() * 1000)

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        await self.on_revoked(partitions)


async def _wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:g} s: {what}"
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def _steady_producer(bootstrap: str, topic: str, sent: list[str]) -> AsyncIterator[None]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()

    async def produce() -> None:
        while True:
            value = f"v{len(sent)}"
            await producer.send_and_wait(topic, value.encode(), partition=len(sent) % PARTITIONS)
            sent.append(value)
            await asyncio.sleep(0.01)

    task = asyncio.create_task(produce())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await producer.stop()


async def test_java_and_streamjoin_members_share_a_cooperative_group(
    kafka_broker: Broker, java_member_classes: Path, unique: str
) -> None:
    broker = kafka_broker
    topic, group = f"interop-{unique}", f"interop-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, PARTITIONS)])
    timeline, sent = Timeline(), []
    everything = set(range(PARTITIONS))
    java1 = JavaMember(java_member_classes, broker, topic, group, "java-1")
    java2 = JavaMember(java_member_classes, broker, topic, group, "java-2")
    ours = CooperativeConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        assignors=["cooperative-sticky"],
        listener=Recorder("streamjoin", timeline),
        auto_offset_reset="earliest",
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
        client_id="streamjoin",
    )

    async def consume() -> None:
        while True:
            for records in (await ours.getmany(timeout_ms=200)).values():
                timeline.consumed.update(r.value.decode() for r in records)

    def split(*members: str) -> bool:
        owned = [timeline.owned_now(m) for m in members]
        return (
            all(owned) and set().union(*owned) == everything and sum(map(len, owned)) == PARTITIONS
        )

    async with _steady_producer(broker.bootstrap, topic, sent):
        await java1.start(timeline)
        await _wait_until(lambda: timeline.owned_now("java-1") == everything, 90, "java-1 owns all")
        await ours.start()
        consuming = asyncio.create_task(consume())
        try:
            await _wait_until(lambda: split("java-1", "streamjoin"), 90, "java-1 leads, both own")
            assert "java-1" in timeline.led and not ours.member.is_leader
            await java1.stop()
            await _wait_until(
                lambda: timeline.owned_now("streamjoin") == everything, 90, "we own all"
            )
            await java2.start(timeline)
            await _wait_until(lambda: split("java-2", "streamjoin"), 90, "we lead, both own")
            assert ours.member.is_leader and "java-2" not in timeline.led
        except AssertionError as failed:
            events = [line for m in (java1, java2) for line in m.log if " record " not in line]
            raise AssertionError(
                f"{failed}; Java events: {events}; ours: generation {ours.generation}, "
                f"{sorted(tp.partition for tp in ours.assignment())}; timeline {timeline.owners}"
            ) from None
        finally:
            await java2.stop()
            await java1.stop()
    await _wait_until(lambda: set(sent) <= timeline.consumed, 60, "the last records consumed")
    consuming.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await consuming
    await ours.stop()

    assert timeline.double_owners() == []
    assert sorted(set(sent) - timeline.consumed) == []
    print(
        f"\njoin rounds: {timeline.rounds} (each member's completed rebalances); "
        f"{len(sent)} records, all consumed"
    )
