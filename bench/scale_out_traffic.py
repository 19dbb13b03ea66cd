"""Traffic for bench/scale_out.py: state built up front (and its size), a steady joined load, and
the output's arrival times per partition (a task's pause is the longest gap between outputs)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from ads_join import Click, Impression, longest_gap, longest_gap_at, make_app, topic_names
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.state import changelog_end_offset_sums

__all__ = ("Arrivals", "produce_load", "produce_state", "state_sizes")

STATE_START_MS = 1_700_000_000_000
STATE_SPAN_MS = 600_000
"""Event time the state's impressions spread over (well inside the benchmark's window)."""
LOAD_START_MS = STATE_START_MS + STATE_SPAN_MS + 100_000


def impression(auction: str, ts: int) -> bytes:
    encoded: bytes = Impression(auction, "spring-sale", "user-00001", ts).encode()
    return encoded


async def produce_state(bootstrap: str, topic: str, impressions: int, rate: int) -> None:
    """`impressions` never-clicked impressions, keyed by auction (the default partitioner
    spreads them over the tasks), at about `rate` per second: workers far behind would not
    yield to their heartbeats for seconds (see the report), so keep them close."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=512 * 1024
    )
    await producer.start()
    try:
        started = time.monotonic()
        pending = []
        for i in range(impressions):
            key = f"state-{i:09d}"
            ts = STATE_START_MS + i * STATE_SPAN_MS // impressions
            sent = await producer.send(
                topic, impression(key, ts), key=key.encode(), timestamp_ms=ts
            )
            pending.append(sent)
            if len(pending) >= 5_000:
                await asyncio.gather(*pending)
                pending.clear()
                ahead = (i + 1) / rate - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


async def produce_load(bootstrap: str, prefix: str, pairs_per_s: int, stop: asyncio.Event) -> None:
    """An impression and its click 1 ms later to `prefix`'s topics, `pairs_per_s` times a
    second, event time advancing with the wall clock after the state's, until `stop`."""
    impressions, clicks, _ = topic_names(prefix)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        started = time.monotonic()
        i = 0
        while True:
            elapsed = time.monotonic() - started
            if i >= elapsed * pairs_per_s:  # ahead of the rate: wait (the same pair next time)
                if stop.is_set():
                    break
                await asyncio.sleep(0.01)
                continue
            key = f"{prefix}-load-{i:09d}"
            ts = LOAD_START_MS + int(elapsed * 1000)
            await producer.send(impressions, impression(key, ts), key=key.encode(), timestamp_ms=ts)
            click = Click(key, ts + 1).encode()
            await producer.send(clicks, click, key=key.encode(), timestamp_ms=ts + 1)
            i += 1
        await producer.flush()
    finally:
        await producer.stop()


async def state_sizes(bootstrap: str, app_id: str, tasks: int) -> list[int]:
    """Changelog records of each task's stores (sorted), read from fetched high watermarks."""
    topology = AppTopology(make_app(app_id), {"attribute": tasks})
    specs = [topology.task_spec(TaskId("attribute", p)) for p in range(tasks)]
    sums = await changelog_end_offset_sums(bootstrap, app_id, specs)
    return sorted(sums.values())


class Arrivals:
    """When output records arrived, per partition (`time.time()`)."""

    def __init__(self) -> None:
        self.times: defaultdict[int, list[float]] = defaultdict(list)

    async def read(self, bootstrap: str, topic: str, partitions: int, stop: asyncio.Event) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=20
        )
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=50)
                now = time.time()
                for tp, records in batch.items():
                    if records:
                        self.times[tp.partition].append(now)
        finally:
            await consumer.stop()

    def longest_gap(self, partition: int, start: float, end: float) -> float:
        return longest_gap(self.times.get(partition, []), start, end)

    def where(self, partitions: Iterable[int], start: float, end: float) -> str:
        """Each partition's longest gap and when it began, on the workers' log clock: to find
        in their kept logs what the task waited for."""
        spans = []
        for partition in sorted(partitions):
            length, began = longest_gap_at(self.times.get(partition, []), start, end)
            clock = datetime.fromtimestamp(began).strftime("%H:%M:%S,%f")[:-3]
            spans.append(f"task {partition}: {length:.2f} s from {clock}")
        return "; ".join(spans)
