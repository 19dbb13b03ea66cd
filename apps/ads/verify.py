"""Read the join's output while the demo runs, and check it against what the generator expects."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from aiokafka import TopicPartition
from data import AdTraffic

from streamjoin.kafka.security_config import connection_from_environment

OUTPUT = "ads-attributed"


@dataclass
class OutputLog:
    """Output records as they arrive: which pairs, how often, and when per partition.
    `complete` is set once every auction in `expected` has its pair."""

    expected: set[str]
    complete: asyncio.Event = field(default_factory=asyncio.Event)
    pairs: Counter[str] = field(default_factory=Counter)
    """auction id -> times an impression-click pair of it arrived."""
    unclicked: int = 0
    arrivals: defaultdict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def __post_init__(self) -> None:
        self._missing = len(self.expected)
        if not self._missing:
            self.complete.set()

    def add(self, partition: int, value: bytes) -> None:
        record = json.loads(value)
        self.arrivals[partition].append(time.monotonic())
        if record["clicked"]:
            auction = record["auction_id"]
            self.pairs[auction] += 1
            if self.pairs[auction] == 1 and auction in self.expected:
                self._missing -= 1
                if not self._missing:
                    self.complete.set()
        else:
            self.unclicked += 1

    def longest_pauses(self, start: float, end: float) -> dict[int, tuple[float, float]]:
        """Per partition, the longest time without output between `start` and `end`, and
        when it began."""
        return {
            partition: longest_gap_at(times, start, end)
            for partition, times in sorted(self.arrivals.items())
        }


def longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest time between `start` and `end` with none of `times` in it."""
    return longest_gap_at(times, start, end)[0]


def longest_gap_at(times: list[float], start: float, end: float) -> tuple[float, float]:
    """The longest time between `start` and `end` with none of `times` in it, and its start."""
    inside = [start, *(t for t in times if start <= t <= end), end]
    return max((b - a, a) for a, b in itertools.pairwise(inside))


async def collect_output(
    bootstrap: str, partitions: int, log: OutputLog, stop: asyncio.Event
) -> None:
    consumer = connection_from_environment(bootstrap).consumer(enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(OUTPUT, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while not stop.is_set():
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                for record in records:
                    log.add(tp.partition, record.value)
    finally:
        await consumer.stop()


def expected_pairs(traffic: AdTraffic) -> set[str]:
    """Auction ids whose click falls in its impression's window (all of the generator's)."""
    return set(expected_delays(traffic))


def expected_delays(traffic: AdTraffic) -> dict[str, int]:
    """Auction id -> click delay (ms) of each pair the join must produce."""
    shown = {i.auction_id: i.timestamp_ms for i in traffic.impressions}
    delays = {c.auction_id: c.timestamp_ms - shown[c.auction_id] for c in traffic.clicks}
    return {auction: delay for auction, delay in delays.items() if 0 <= delay <= 60_000}
