"""Soak: two workers of the ad join under steady traffic on a local broker (--broker: the
embedded Tansu, or Apache Kafka), each worker's resident memory sampled from outside every
--sample-every seconds, for --minutes. With --kill-every, one worker (each in turn) is killed
with SIGKILL that often and started again at once on its state directory, as a supervisor
would: the report then says whether anything was lost through the crashes.

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
    python bench/soak.py --broker kafka --modes bounded --minutes 60 --kill-every 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ads_join import Click, topic_names
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from runner_process import RunnerProcess, rss_bytes, settled, until
from scale_out_traffic import impression
from soak_crew import Crew, group_lag, until_drained

from streamjoin.broker import BROKER_KINDS, local_broker
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
    kills: int


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


async def sample_until(
    crew: Crew,
    traffic: Traffic,
    args: argparse.Namespace,
    *,
    label: str,
    work: Path,
    t0: float,
    in_before: int,
) -> tuple[list[tuple[float, list[int]]], int]:
    """For --minutes from `t0`: the workers' RSS every --sample-every s, a worker killed and
    started again every --kill-every s; returns the RSS samples and the largest lag seen."""
    rss: list[tuple[float, list[int]]] = []
    max_lag = 0
    next_sample = t0
    next_kill = t0 + args.kill_every if args.kill_every else float("inf")
    while (now := time.monotonic()) < t0 + args.minutes * 60:
        behind = 2 * traffic.sent - (crew.records_in() - in_before)
        max_lag = max(max_lag, behind)
        if now >= next_kill:
            await crew.kill_one(work)
            print(f"{label} {now - t0:6.0f} s  SIGKILL #{crew.kills}", flush=True)
            next_kill += args.kill_every
        if now >= next_sample:
            rss.append((now - t0, [rss_bytes(pid) for pid in crew.pids]))
            print(
                f"{label} {now - t0:6.0f} s  {sample(rss[-1][1], crew.workers, behind)}", flush=True
            )
            next_sample += args.sample_every
        await asyncio.sleep(0.5)
    return rss, max_lag


def keep_logs(work: Path, mode: str, into: Path) -> None:
    for log in work.glob(f"{mode}-*.log"):
        shutil.copy(log, into / log.name)


async def run_mode(mode: str, bootstrap: str, args: argparse.Namespace, work: Path) -> Result:
    prefix = f"soak-{uuid.uuid4().hex[:6]}-{mode}"
    imp, clk, out = topic_names(prefix)
    await ensure_topics(bootstrap, [TopicSpec(t, args.partitions) for t in (imp, clk, out)])
    memory = ["--memory", args.memory] if args.memory and mode == "bounded" else []
    crew = Crew(
        [
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
    )
    traffic = Traffic(bootstrap, prefix, args.pairs_per_s)
    stop = asyncio.Event()
    try:
        started = time.time()
        for worker in crew.workers:
            await worker.start()
        await until(lambda: settled(crew.workers, args.partitions, started), 120, "tasks spread")
        cpu_before = crew.cpu_s()
        in_before, t0 = crew.records_in(), time.monotonic()
        producing = asyncio.create_task(traffic.run(stop))
        rss, max_lag = await sample_until(
            crew, traffic, args, label=f"[{mode}]", work=work, t0=t0, in_before=in_before
        )
        stop.set()
        await producing
        elapsed = time.monotonic() - t0
        processed = crew.records_in() - in_before
        lag_at_stop = 2 * traffic.sent - processed
        cpu = crew.cpu_s() - cpu_before
        # Drained once the group's commits reach the inputs' ends (the workers' own counts
        # cannot tell: records reprocessed after a kill count twice).
        try:
            await until_drained(
                lambda: group_lag(bootstrap, prefix, [imp, clk], args.partitions), 180
            )
        except TimeoutError as error:
            print(f"[{mode}] {error}: their pairs count as missing")
        await asyncio.sleep(10)  # a commit interval and more: outputs flushed
    finally:
        stop.set()
        await crew.stop()
        if args.keep_logs:
            keep_logs(work, mode, Path(args.keep_logs))
    pairs, unclicked = await read_pairs(bootstrap, out, args.partitions)
    missing = [key for n in range(traffic.sent) if (key := f"{prefix}-{n:09d}") not in pairs]
    history = [s for s in crew.history() if s.t >= started]
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
        late=crew.late(),
        assignments=crew.assignments(),
        longest_stall_s=max((s.stall for s in history), default=0.0),
        missing_sample=missing[:5] + missing[-5:] if len(missing) > 10 else missing,
        kills=crew.kills,
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
        print(f"{'':<10} RSS growth in the last third, per worker: {last_third_growth(r.rss)}")
        print(
            f"{'':<10} missing: {r.missing_unclicked} came out unclicked, "
            f"{r.missing - r.missing_unclicked} not at all; {r.undelivered} records undelivered; "
            f"late records {r.late}; assignments {r.assignments}; longest loop stall "
            f"{r.longest_stall_s:.1f} s; workers killed (SIGKILL) {r.kills}"
            + (f"; missing e.g. {', '.join(r.missing_sample)}" if r.missing_sample else "")
        )
    by_mode = {r.mode: r for r in results}
    if "bounded" in by_mode and "unbounded" in by_mode:
        ratio = by_mode["bounded"].cpu_us_per_record / by_mode["unbounded"].cpu_us_per_record
        print(f"CPU per record, bounded / unbounded: {ratio:.2f}x")


def last_third_growth(rss: list[tuple[float, list[int]]]) -> str:
    """Each worker's RSS slope (least squares) over the samples of the run's last third: the
    goal is under 1 MiB a minute, a curve that has levelled off."""
    end = rss[-1][0]
    tail = [(t, sizes) for t, sizes in rss if t >= end * 2 / 3]
    if len(tail) < 2:
        return "too few samples"
    minutes = [t / 60 for t, _ in tail]
    slopes = [
        statistics.linear_regression(minutes, [sizes[i] / MIB for _, sizes in tail]).slope
        for i in range(len(tail[0][1]))
    ]
    return ", ".join(f"{slope:+.2f} MiB/min" for slope in slopes)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="soak-") as work, local_broker(args.broker) as broker:
        print(f"{broker.name} at {broker.bootstrap}, cpus={os.cpu_count()}, load {load()}")
        results = [
            await run_mode(mode, broker.bootstrap, args, Path(work))
            for mode in args.modes.split(",")
        ]
    report(results, args)
    print(f"load at the end {load()}")


def load() -> str:
    """The load averages (1, 5, 15 min): figures measured under load are indicative only."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


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
    parser.add_argument("--broker", choices=BROKER_KINDS, default="tansu")
    parser.add_argument(
        "--kill-every",
        type=float,
        default=0.0,
        help="seconds between SIGKILLs of a worker (each in turn, started again at once); 0: none",
    )
    asyncio.run(main(parser.parse_args()))
