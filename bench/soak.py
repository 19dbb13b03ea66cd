"""Soak: two workers of the ad join under steady traffic on the embedded broker, each worker's
resident memory sampled from outside every --sample-every seconds, for --minutes.

For each mode, in the same run and one after the other:
  bounded     the worker's memory budget (--memory, default the app's 256 MiB);
  unbounded   the settings from before the budget (bench/unbounded.py), the baseline.

Per mode it prints the RSS of each worker at every sample (the curve should level off at the
budget plus the interpreter's own memory), then: input throughput, CPU per input record, lag
when the traffic stopped, and pairs missing or repeated in the output at the end. A missing
pair is told apart: its impression came out unclicked (the join did not see the click in time:
the workers' late records and longest loop stalls are printed beside it), or not at all.

    python bench/soak.py                        # 30 minutes per mode, 4 tasks per worker
    python bench/soak.py --minutes 2 --sample-every 10
    python bench/soak.py --partitions 32        # 16 tasks per worker (4x)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ads_join import Click, topic_names
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from runner_process import RunnerProcess, settled, until
from scale_out_traffic import impression

from streamjoin.broker import EmbeddedBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import log_bounds

MODES = {"bounded": [], "unbounded": ["--unbounded"]}
MIB = 1 << 20


@dataclass
class Result:
    mode: str
    rss: list[tuple[float, list[int]]]
    """(seconds since traffic started, RSS of each worker)."""
    records_per_s: float
    cpu_us_per_record: float
    lag_at_stop: int
    max_lag: int
    pairs_sent: int
    undelivered: int
    """Records the broker did not acknowledge (their pairs count as missing)."""
    pairs: int
    missing: int
    missing_unclicked: int
    """Missing pairs whose impression came out without its click."""
    repeated: int
    late: int
    assignments: int
    longest_stall_s: float
    missing_sample: list[str]


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Traffic:
    """An impression and its click 1 ms later, `pairs_per_s` times a second, event time
    following the wall clock; keys `<prefix>-<n>`, counted."""

    def __init__(self, bootstrap: str, prefix: str, pairs_per_s: int) -> None:
        self.bootstrap, self.prefix, self.pairs_per_s = bootstrap, prefix, pairs_per_s
        self.sent = 0
        self.undelivered = 0

    def _count_failure(self, delivery: asyncio.Future[object]) -> None:
        if delivery.cancelled() or delivery.exception() is not None:
            self.undelivered += 1

    async def run(self, stop: asyncio.Event) -> None:
        impressions, clicks, _ = topic_names(self.prefix)
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            started = time.monotonic()
            start_ms = int(time.time() * 1000)
            # Stops when told even if behind: a loaded machine may not keep up with the rate,
            # and catching up would never end (the bench then waited forever).
            while not stop.is_set():
                elapsed = time.monotonic() - started
                if self.sent >= elapsed * self.pairs_per_s:
                    await asyncio.sleep(0.01)
                    continue
                key = f"{self.prefix}-{self.sent:09d}"
                ts = start_ms + int(elapsed * 1000)
                for delivery in (
                    await producer.send(
                        impressions, impression(key, ts), key=key.encode(), timestamp_ms=ts
                    ),
                    await producer.send(
                        clicks, Click(key, ts + 1).encode(), key=key.encode(), timestamp_ms=ts + 1
                    ),
                ):
                    delivery.add_done_callback(self._count_failure)
                self.sent += 1
            await producer.flush()
        finally:
            await producer.stop()


async def read_pairs(bootstrap: str, topic: str, partitions: int) -> tuple[Counter[str], set[str]]:
    """(auction id -> clicked pairs, auction ids output unclicked) in the output, read to its
    end."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    pairs: Counter[str] = Counter()
    unclicked: set[str] = set()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        bounds = await log_bounds(bootstrap, tps)
        ends = {tp: bound.end for tp, bound in zip(tps, bounds, strict=True)}
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    value = json.loads(record.value or b"{}")
                    if value.get("clicked"):
                        pairs[value["auction_id"]] += 1
                    else:
                        unclicked.add(value["auction_id"])
    finally:
        await consumer.stop()
    return pairs, unclicked


def sample(sizes: list[int], workers: list[RunnerProcess], behind: int) -> str:
    """One RSS line: each worker's RSS beside what its memory budget counts in use (the rest is
    the interpreter and what the budget does not cover, such as the Kafka clients' buffers)."""
    rss = ", ".join(f"{size / MIB:.0f}" for size in sizes)
    counted = ", ".join(f"{w.latest.budgeted / MIB:.0f}" if w.latest else "-" for w in workers)
    return f"RSS MiB: {rss} (budget counts {counted}); {behind} records behind"


def records_in(workers: list[RunnerProcess]) -> int:
    return sum(w.latest.records_in for w in workers if w.latest is not None)


async def run_mode(mode: str, bootstrap: str, args: argparse.Namespace, work: Path) -> Result:
    prefix = f"soak-{uuid.uuid4().hex[:6]}-{mode}"
    imp, clk, out = topic_names(prefix)
    await ensure_topics(bootstrap, [TopicSpec(t, args.partitions) for t in (imp, clk, out)])
    memory = ["--memory", args.memory] if args.memory and mode == "bounded" else []
    workers = [
        RunnerProcess(
            f"{mode}-{i}",
            [
                prefix,
                "--bootstrap",
                bootstrap,
                "--state-dir",
                str(work / f"{mode}-{i}"),
                "--report-every",
                "1",
                *memory,
                *MODES[mode],
            ],
            work / f"{mode}-{i}.log",
        )
        for i in (1, 2)
    ]
    traffic = Traffic(bootstrap, prefix, args.pairs_per_s)
    stop = asyncio.Event()
    try:
        started = time.time()
        for worker in workers:
            await worker.start()
        await until(lambda: settled(workers, args.partitions, started), 120, "tasks spread")
        pids = [w.pid for w in workers]
        cpu_before = [cpu_seconds(pid) for pid in pids]
        in_before, t0 = records_in(workers), time.monotonic()
        producing = asyncio.create_task(traffic.run(stop))
        rss: list[tuple[float, list[int]]] = []
        max_lag = 0
        end = t0 + args.minutes * 60
        next_sample = t0
        while time.monotonic() < end:
            now = time.monotonic()
            max_lag = max(max_lag, 2 * traffic.sent - (records_in(workers) - in_before))
            if now >= next_sample:
                rss.append((now - t0, [rss_bytes(pid) for pid in pids]))
                behind = 2 * traffic.sent - (records_in(workers) - in_before)
                print(
                    f"[{mode}] {now - t0:6.0f} s  {sample(rss[-1][1], workers, behind)}", flush=True
                )
                next_sample += args.sample_every
            await asyncio.sleep(0.5)
        stop.set()
        await producing
        elapsed = time.monotonic() - t0
        processed = records_in(workers) - in_before
        lag_at_stop = 2 * traffic.sent - processed
        cpu = sum(cpu_seconds(pid) for pid in pids) - sum(cpu_before)
        try:
            await until(lambda: records_in(workers) - in_before >= 2 * traffic.sent, 60, "drained")
        except TimeoutError as error:
            left = 2 * traffic.sent - (records_in(workers) - in_before)
            print(f"[{mode}] {error}: {left} records not processed (their pairs count as missing)")
        await asyncio.sleep(10)  # a commit interval and more: outputs flushed
    finally:
        stop.set()
        await asyncio.gather(*(w.stop() for w in workers))
        if args.keep_logs:
            for worker in workers:
                shutil.copy(worker.log, Path(args.keep_logs) / worker.log.name)
    pairs, unclicked = await read_pairs(bootstrap, out, args.partitions)
    missing = [key for n in range(traffic.sent) if (key := f"{prefix}-{n:09d}") not in pairs]
    history = [s for w in workers for s in w.history if s.t >= started]
    return Result(
        mode,
        rss,
        records_per_s=processed / elapsed,
        cpu_us_per_record=cpu / max(processed, 1) * 1e6,
        lag_at_stop=lag_at_stop,
        max_lag=max_lag,
        pairs_sent=traffic.sent,
        undelivered=traffic.undelivered,
        pairs=len(pairs),
        missing=len(missing),
        missing_unclicked=sum(1 for key in missing if key in unclicked),
        repeated=sum(pairs.values()) - len(pairs),
        late=sum(w.latest.late for w in workers if w.latest is not None),
        assignments=sum(w.latest.assignments for w in workers if w.latest is not None),
        longest_stall_s=max((s.stall for s in history), default=0.0),
        missing_sample=missing[:5] + missing[-5:] if len(missing) > 10 else missing,
    )


def report(results: list[Result], args: argparse.Namespace) -> None:
    tasks = args.partitions // 2
    print(
        f"\n{args.minutes:g} min per mode, {tasks} tasks per worker, "
        f"{args.pairs_per_s} pairs/s ({2 * args.pairs_per_s} records/s) asked for 2 workers; "
        "sent: "
        + ", ".join(f"{r.mode} {r.pairs_sent / (args.minutes * 60):.0f} pairs/s" for r in results)
    )
    print(
        f"{'mode':<10} {'RSS first':>10} {'RSS half':>10} {'RSS last':>10} {'records/s':>10} "
        f"{'CPU us/rec':>10} {'lag@stop':>9} {'max lag':>8} {'pairs':>8} {'missing':>8} "
        f"{'repeated':>8}"
    )
    for r in results:
        first, half, last = r.rss[0][1], r.rss[len(r.rss) // 2][1], r.rss[-1][1]

        def mib(sizes: list[int]) -> str:
            return "/".join(f"{s / MIB:.0f}" for s in sizes)

        print(
            f"{r.mode:<10} {mib(first):>10} {mib(half):>10} {mib(last):>10} "
            f"{r.records_per_s:>10.0f} {r.cpu_us_per_record:>10.1f} {r.lag_at_stop:>9} "
            f"{r.max_lag:>8} {r.pairs:>8} {r.missing:>8} {r.repeated:>8}"
        )
        print(
            f"{'':<10} missing: {r.missing_unclicked} came out unclicked, "
            f"{r.missing - r.missing_unclicked} not at all; {r.undelivered} records undelivered; "
            f"late records {r.late}; assignments {r.assignments}; longest loop stall "
            f"{r.longest_stall_s:.1f} s"
            + (f"; missing e.g. {', '.join(r.missing_sample)}" if r.missing_sample else "")
        )
    by_mode = {r.mode: r for r in results}
    if "bounded" in by_mode and "unbounded" in by_mode:
        ratio = by_mode["bounded"].cpu_us_per_record / by_mode["unbounded"].cpu_us_per_record
        print(f"CPU per record, bounded / unbounded: {ratio:.2f}x")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="soak-") as work, EmbeddedBroker() as broker:
        print(f"embedded broker {broker.bootstrap}, cpus={os.cpu_count()}")
        results = [
            await run_mode(mode, broker.bootstrap, args, Path(work))
            for mode in args.modes.split(",")
        ]
    report(results, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="of traffic per mode")
    parser.add_argument("--sample-every", type=float, default=30.0, help="seconds between RSS")
    parser.add_argument("--partitions", type=int, default=8, help="tasks (2 workers share them)")
    parser.add_argument("--pairs-per-s", type=int, default=1_500, help="impression-click pairs")
    parser.add_argument("--memory", help="budget of the bounded mode (default the app's)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--keep-logs", help="copy the workers' logs into this directory")
    asyncio.run(main(parser.parse_args()))
