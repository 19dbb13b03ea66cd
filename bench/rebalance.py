"""Per-partition processing gap while a fourth member joins a group of three, under steady load.

Four groups, one after the other on the same broker (--brokers: Tansu, Apache Kafka, or both
in turn), each consuming its own 12-
partition topic while a producer writes one record to every partition every 20 ms:
  cooperative - streamjoin CooperativeConsumer, `cooperative-sticky` (COOPERATIVE);
  coop-1.5s   - the same, its follow-up rejoin waiting 1.5 s after each assignment on any broker
                (as before that wait became Tansu's only): the moved partitions' baseline;
  eager       - streamjoin CooperativeConsumer, `sticky` (an EAGER assignor: stop the world);
  aiokafka    - plain aiokafka consumers in a group (aiokafka's own EAGER coordinator).
For each, three members settle, the steady-state gap is measured for a few seconds (the
reference "fetch cycle"), then a fourth member joins. From the moment it starts until the group
has settled (plus one second), the longest time without a delivered record is taken per
partition; partitions are "moved" if their owner changed, "unmoved" otherwise. Printed: median
and max gap of unmoved and moved partitions, and ratios to aiokafka. Target: unmoved partitions
under COOPERATIVE never pause longer than one fetch cycle.

    python bench/rebalance.py [--session-ms 6000] [--heartbeat-ms 500] [--brokers tansu,kafka]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streamjoin.broker import BROKER_KINDS, Broker, local_broker
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.kafka.topics import TopicSpec, ensure_topics

PARTITIONS = 12
PRODUCE_EVERY = 0.02
STEADY_SECONDS = 3.0
FIXED_DELAY_MS = 1_500
"""The follow-up rejoin's wait after an assignment on every broker before it became Tansu's only."""
AFTER_SETTLED = 1.0


@dataclass
class Deliveries:
    times: dict[int, list[float]] = field(default_factory=dict)

    def record(self, batch: dict[Any, list[Any]]) -> None:
        now = time.monotonic()
        for tp, records in batch.items():
            if records:
                self.times.setdefault(tp.partition, []).append(now)

    def longest_gap(self, partition: int, start: float, end: float) -> float:
        inside = [t for t in self.times.get(partition, []) if start < t < end]
        points = [start, *inside, end]
        return max(b - a for a, b in itertools.pairwise(points))


async def produce(bootstrap: str, topic: str, stop: asyncio.Event) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        while not stop.is_set():
            sends = [producer.send(topic, b"x", partition=p) for p in range(PARTITIONS)]
            for sent in await asyncio.gather(*sends):
                await sent
            await asyncio.sleep(PRODUCE_EVERY)
    finally:
        await producer.stop()


async def consume(consumer: Any, log: Deliveries, stop: asyncio.Event) -> None:
    while not stop.is_set():
        log.record(await consumer.getmany(timeout_ms=100))


def owners(consumers: list[Any]) -> dict[int, int]:
    return {tp.partition: i for i, c in enumerate(consumers) for tp in c.assignment()}


async def until(condition: Callable[[], bool], within: float = 120) -> None:
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - state spread over several consumers
            await asyncio.sleep(0.05)


def settled(consumers: list[Any]) -> Callable[[], bool]:
    def check() -> bool:
        owned = [tp for c in consumers for tp in c.assignment()]
        if len(owned) != PARTITIONS or len(set(owned)) != PARTITIONS:
            return False
        members = [c.member for c in consumers if isinstance(c, CooperativeConsumer)]
        return all(m.state.value == "stable" and m._rejoin_reason is None for m in members)

    return check


@dataclass
class Result:
    name: str
    steady: float
    took: float
    unmoved: list[float]
    moved: list[float]


async def run(
    name: str, broker: Broker, make: Callable[[str, str], Awaitable[Any]], suffix: str
) -> Result:
    topic, group = f"bench-{name}-{suffix}", f"bench-{name}-{suffix}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, PARTITIONS)])
    stop = asyncio.Event()
    log = Deliveries()
    producer = asyncio.create_task(produce(broker.bootstrap, topic, stop))
    consumers: list[Any] = []
    readers: list[asyncio.Task[None]] = []
    try:
        for _ in range(3):
            consumers.append(await make(topic, group))
            readers.append(asyncio.create_task(consume(consumers[-1], log, stop)))
        await until(settled(consumers))
        await asyncio.sleep(1.0)
        steady_start = time.monotonic()
        await asyncio.sleep(STEADY_SECONDS)
        steady = max(log.longest_gap(p, steady_start, time.monotonic()) for p in range(PARTITIONS))
        before = owners(consumers)
        started = time.monotonic()
        consumers.append(await make(topic, group))
        readers.append(asyncio.create_task(consume(consumers[-1], log, stop)))
        await until(lambda: bool(consumers[-1].assignment()) and settled(consumers)())
        took = time.monotonic() - started
        await asyncio.sleep(AFTER_SETTLED)
        end = time.monotonic()
        after = owners(consumers)
        gaps = {p: log.longest_gap(p, started, end) for p in range(PARTITIONS)}
        moved = [gaps[p] for p in range(PARTITIONS) if before.get(p) != after.get(p)]
        unmoved = [gaps[p] for p in range(PARTITIONS) if before.get(p) == after.get(p)]
        return Result(name, steady, took, unmoved, moved)
    finally:
        stop.set()
        await asyncio.gather(producer, *readers, return_exceptions=True)
        for consumer in consumers:
            await consumer.stop()


def streamjoin_member(
    bootstrap: str, assignor: str, timeouts: dict[str, int]
) -> Callable[[str, str], Awaitable[Any]]:
    async def make(topic: str, group: str) -> CooperativeConsumer:
        consumer = CooperativeConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            assignors=[assignor],
            auto_offset_reset="earliest",
            auto_commit_interval_ms=1_000,
            **timeouts,
        )
        await consumer.start()
        return consumer

    return make


def aiokafka_member(
    bootstrap: str, timeouts: dict[str, int]
) -> Callable[[str, str], Awaitable[Any]]:
    async def make(topic: str, group: str) -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            auto_commit_interval_ms=1_000,
            session_timeout_ms=timeouts["session_timeout_ms"],
            heartbeat_interval_ms=timeouts["heartbeat_interval_ms"],
            max_poll_interval_ms=max(timeouts["rebalance_timeout_ms"], 10_000),
        )
        await consumer.start()
        return consumer

    return make


def describe(values: list[float]) -> str:
    if not values:
        return "     -        -  "
    return f"{statistics.median(values):6.2f} s {max(values):6.2f} s"


async def main(session_ms: int, heartbeat_ms: int, brokers: list[str]) -> None:
    for kind in brokers:
        with local_broker(kind) as broker:
            print(f"\n== on {broker.name} (started in {broker.started_in or 0:.1f} s)")
            await on_broker(broker, session_ms, heartbeat_ms)


async def on_broker(broker: Broker, session_ms: int, heartbeat_ms: int) -> None:
    timeouts = {
        "session_timeout_ms": session_ms,
        "heartbeat_interval_ms": heartbeat_ms,
        "rebalance_timeout_ms": session_ms,
    }
    suffix = str(int(time.time()))
    bootstrap = broker.bootstrap
    results = [
        await run(
            "cooperative",
            broker,
            streamjoin_member(bootstrap, "cooperative-sticky", timeouts),
            suffix,
        ),
        await run(
            "coop-1.5s",
            broker,
            streamjoin_member(
                bootstrap, "cooperative-sticky", {**timeouts, "rejoin_delay_ms": FIXED_DELAY_MS}
            ),
            suffix,
        ),
        await run("eager", broker, streamjoin_member(bootstrap, "sticky", timeouts), suffix),
        await run("aiokafka", broker, aiokafka_member(bootstrap, timeouts), suffix),
    ]
    print(
        f"\n{PARTITIONS} partitions, 1 record/partition every {PRODUCE_EVERY * 1000:.0f} ms; "
        f"a 4th member joins 3 (session {session_ms} ms, heartbeat {heartbeat_ms} ms)\n"
    )
    header = ("group", "steady max", "settled in", "unmoved median/max", "moved median/max")
    print(f"{header[0]:12} {header[1]:>10} {header[2]:>10}   {header[3]:>20}   {header[4]:>18}")
    for r in results:
        print(
            f"{r.name:12} {r.steady:8.2f} s {r.took:8.1f} s   {describe(r.unmoved):>20} "
            f"({len(r.unmoved):2})   {describe(r.moved):>18} ({len(r.moved):2})"
        )
    coop, fixed = results[0], results[1]
    if coop.moved and fixed.moved:
        print(
            f"cooperative: longest moved pause {max(coop.moved):.2f} s against "
            f"{max(fixed.moved):.2f} s with every follow-up rejoin waiting "
            f"{FIXED_DELAY_MS / 1000:.1f} s"
        )
    base = results[-1]
    base_unmoved = max(base.unmoved or base.moved)
    for r in results[:-1]:
        if r.unmoved:
            longest = max(r.unmoved)
            print(
                f"{r.name}: longest unmoved pause {longest:.2f} s = "
                f"{longest / base_unmoved:.2f} x aiokafka's, "
                f"{longest / r.steady:.2f} x its own steady-state fetch cycle"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session-ms", type=int, default=6_000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument(
        "--brokers", default="tansu", help=f"comma-separated, in order: {', '.join(BROKER_KINDS)}"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.session_ms, args.heartbeat_ms, args.brokers.split(",")))
