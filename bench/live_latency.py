"""One contender of bench/vs_kafka_streams.py on live traffic: end-to-end latency, CPU, memory.

The contender runs on topics of its own and gets traffic from bench/live_traffic.py
(impressions stamped with the wall clock, 30% clicked 0-2 s later) for `warmup_s` (its JIT
warms up, its tasks start), then `live_s` measured: for every clicked result whose click was
stamped in the measured span, the time a reader in this process got it minus the click's
timestamp. Reported: p50, p99, max; the p99 of each second of arrivals (a bump at every commit
shows as a few slow seconds), and the same folded onto the 5 s commit interval (a bump at
commits); CPU per input record over the measured span (from /proc); peak RSS; how far behind
the clock the newest result was when the traffic stopped. The contender's stdout goes beside its
log (`.status.log`): for the worker, its status lines, from which come its RSS at the first
(the interpreter's baseline, before any traffic) and the most its memory budget counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ads_join import topic_names
from aiokafka import AIOKafkaConsumer, TopicPartition
from contenders import HERE
from runner_process import rss_bytes, terminate

from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent

__all__ = ("Live", "process_cpu_s", "run_live")

JOIN_GROUP_S = 10.0
"""Time the contender gets to join its group before the traffic starts."""
COMMIT_INTERVAL_S = 5.0
"""Both contenders' commit interval (the worker's default; Kafka Streams' set to it)."""
AFTER_TRAFFIC_S = 8.0
"""How long results are still read after the traffic stops: a commit interval and then some."""


@dataclass
class Live:
    contender: str
    rate: int
    arrivals: list[tuple[float, float]]
    """(click timestamp, arrival) of each clicked result of the measured span, seconds."""
    cpu_s: float
    records: int
    behind: float
    """Seconds the newest result read was behind the clock when the traffic stopped."""
    peak_rss: int | None
    base_rss: int | None
    """The worker's RSS at its first status line, before any traffic."""
    budgeted: int | None
    """The most the worker's memory budget counted (state/memory.py, and its input buffers)."""
    memory: dict[str, int] | None
    """With --memory-probe: its "memory" figures at its status line of highest RSS."""
    latencies: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.latencies = sorted(arrived - ts for ts, arrived in self.arrivals)

    def quantile(self, q: float, values: Sequence[float] | None = None) -> float:
        ordered = self.latencies if values is None else sorted(values)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")

    def p99_by_second(self) -> list[float]:
        """p99 latency of the results that arrived in each whole second of the span."""
        seconds: dict[int, list[float]] = {}
        for ts, arrived in self.arrivals:
            seconds.setdefault(int(arrived), []).append(arrived - ts)
        return [self.quantile(0.99, seconds[s]) for s in sorted(seconds)]

    def bump(self) -> float:
        """Worst second's p99 over the median second's: ~1 for a steady tail, high when some
        seconds are much slower than the rest (a commit, a collection, the machine)."""
        by_second = self.p99_by_second()
        return max(by_second) / statistics.median(by_second) if by_second else float("nan")

    def commit_bump(self, period_s: float = COMMIT_INTERVAL_S, bins: int = 10) -> float:
        """The same over the arrivals folded onto the commit interval (by arrival time modulo
        `period_s`, in `bins` slices): a stall at every commit falls into the same slice each
        time and makes it stand out; stalls at random times spread over all of them."""
        slices: dict[int, list[float]] = {}
        for ts, arrived in self.arrivals:
            slices.setdefault(int(arrived % period_s / period_s * bins), []).append(arrived - ts)
        p99s = [self.quantile(0.99, values) for values in slices.values()]
        return max(p99s) / statistics.median(p99s) if p99s else float("nan")

    @property
    def cpu_per_record(self) -> float:
        return self.cpu_s / max(1, self.records)


def process_cpu_s(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


async def _read_results(
    consumer: AIOKafkaConsumer,
    topic: str,
    partitions: int,
    got: list[tuple[float, float]],
    newest: list[float],
) -> None:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    while True:
        for records in (await consumer.getmany(timeout_ms=100)).values():
            now = time.time()
            for r in records:
                newest[0] = max(newest[0], r.timestamp / 1000)
                if json.loads(r.value)["clicked"]:
                    got.append((r.timestamp / 1000, now))


async def run_live(
    bootstrap: str,
    command: list[str],
    prefix: str,
    *,
    contender: str,
    rate: int,
    partitions: int,
    warmup_s: float,
    live_s: float,
    log: Path,
) -> Live:
    """Run `command` (the contender on `prefix`'s topics) under live traffic at `rate`."""
    imp, clk, out = topic_names(prefix)
    await ensure_topics(bootstrap, [TopicSpec(t, partitions) for t in (imp, clk, out)])
    status = log.with_suffix(".status.log")
    with log.open("wb") as err, status.open("wb") as lines:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=lines, stderr=err, preexec_fn=die_with_parent
        )
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    got: list[tuple[float, float]] = []
    newest = [0.0]
    reading = asyncio.create_task(_read_results(consumer, out, partitions, got, newest))
    try:
        await asyncio.sleep(JOIN_GROUP_S)
        traffic = await asyncio.create_subprocess_exec(
            sys.executable,
            str(HERE / "live_traffic.py"),
            prefix,
            "--bootstrap",
            bootstrap,
            "--rate",
            str(rate),
            "--seconds",
            str(warmup_s + live_s),
            stdout=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent,
        )
        await asyncio.sleep(warmup_s)
        start, cpu_start = time.time(), process_cpu_s(process.pid)
        await asyncio.sleep(live_s)
        end, cpu_end = time.time(), process_cpu_s(process.pid)
        await traffic.communicate()
        behind = end - newest[0]
        await asyncio.sleep(AFTER_TRAFFIC_S)
        peak = rss_bytes(process.pid, "VmHWM") or None
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await consumer.stop()
        await terminate(process)
    measured = [(ts, arrived) for ts, arrived in got if start <= ts < end]
    base, budgeted, memory = memory_seen(status)
    return Live(
        contender,
        rate,
        measured,
        cpu_end - cpu_start,
        int(rate * (end - start)),
        behind,
        peak,
        base,
        budgeted,
        memory,
    )


def memory_seen(status: Path) -> tuple[int | None, int | None, dict[str, int] | None]:
    """(RSS at the first status line, the most the budget counted, the "memory" figures of
    the line of highest RSS) of a worker's status lines (bench/worker_runner.py); Nones for a
    contender that prints none."""
    lines = []
    for text in status.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            line = json.loads(text)
            if isinstance(line, dict) and "rss" in line:
                lines.append(line)
    if not lines:
        return None, None, None
    peak = max(lines, key=lambda line: line["rss"])
    return lines[0]["rss"], max(line["budgeted"] for line in lines), peak.get("memory")
