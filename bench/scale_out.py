"""Scale-out from 2 to 3 workers under load, with stateful tasks: how long until stable, how much
moves, how long each task pauses, and what the new owner restores at hand-off, for three ways
of moving state, side by side in the same run on the same broker (--brokers: Tansu, Apache
Kafka, or both in turn):

  catch-up - streamjoin: the new worker warms learners while the old owners keep processing,
             and asks for the follow-up rebalance as soon as they are within
             acceptable_recovery_lag (10,000) of the changelog end;
  probing  - the same, but the follow-up waits for a 60 s probing interval (Kafka Streams);
  restore  - plain restore on assignment, no learners: acceptable_recovery_lag is unbounded, so
             every worker counts as caught up, tasks move at once and restore on the new owner.

Each mode has its own topics and app: the demo's ad join (apps/ads/app.py: left join, 5 s grace)
with a one-hour window, so the state built up front stays live while the run lasts, on 12
partitions (12 tasks). Two workers (bench/worker_runner.py, a process each, commit interval 1 s)
build S changelog records of state per task from unclicked impressions (each writes a window
store record and a pending non-match: two changelog records), fed at a bounded rate. Then a
steady load of impression-click pairs starts (every pair joins: each task outputs every few
tens of ms), and a few seconds later a third worker starts. From its start until all tasks run,
as many on each worker, with no warm-up left ("stable"), it measures: that time; when the
newcomer first had warm-ups and first ran a task; how often an active task changed owner
(moves); per task the longest gap between its outputs (its pause: median and max over all
tasks, over the moved ones, max over those that stayed); the longest event-loop stall of any
worker; and per moved task the changelog records its new owner restored as an active before
running ("at hand-off", what the worker reports) and all it read after the old owner had
stopped the task ("while paused", including a standby-style read of a task whose partitions the
cooperative protocol withholds until the follow-up rebalance). max_warmup_replicas is 4 so that
one round of learners covers the 4 tasks the newcomer takes (with Kafka Streams' default of 2
there are two rounds, and two probing intervals in the probing mode). --keep-logs DIR keeps
the workers' logs. About 6 minutes on 2 cores with the defaults, most of it building state;
--state-per-task 20000 takes about 3.

    python bench/scale_out.py [--state-per-task 100000] [--modes catch-up,probing,restore]
                              [--load 300] [--max-warmup-replicas 4] [--standby-replicas 1]
                              [--keep-logs DIR] [--brokers tansu,kafka]   (each in turn)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ads_join import topic_names
from runner_process import RunnerProcess, owners_over_time, settled, until
from scale_out_traffic import Arrivals, produce_load, produce_state, state_sizes

from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.topology.app_topology import TaskId

WINDOW_AFTER_MS = 3_600_000
STEADY_S = 5.0
AFTER_STABLE_S = 1.0
MODES = {
    "catch-up": ["--acceptable-recovery-lag", "10000"],
    "probing": [
        "--acceptable-recovery-lag",
        "10000",
        "--probing-interval-s",
        "60",
        "--no-followup-on-catch-up",
    ],
    "restore": ["--acceptable-recovery-lag", str(10**15)],
}


@dataclass
class Result:
    mode: str
    stable_s: float
    moves: int
    pauses: dict[int, float]
    """Task partition -> longest gap between its outputs."""
    moved: set[int]
    restored_at_handoff: list[int]
    """Per moved task: records its new owner restored as an active before it could run."""
    restored_while_paused: list[int]
    """Per moved task: records its new owner read after the old owner stopped it."""
    steady_gap: float
    learner_at: float | None
    handoff_at: float | None
    stall: float
    """Longest event-loop stall of any worker from the third one's start until stable."""


async def run_mode(mode: str, bootstrap: str, args: argparse.Namespace, work: Path) -> Result:
    prefix = f"scale-{uuid.uuid4().hex[:6]}-{mode}"
    imp, clk, out = topic_names(prefix)
    await ensure_topics(bootstrap, [TopicSpec(t, args.partitions) for t in (imp, clk, out)])
    common = [
        prefix,
        "--bootstrap",
        bootstrap,
        "--window-after-ms",
        str(WINDOW_AFTER_MS),
        "--commit-interval",
        "1",
        "--max-warmup-replicas",
        str(args.max_warmup_replicas),
        "--standby-replicas",
        str(args.standby_replicas),
        *MODES[mode],
    ]
    workers = [
        RunnerProcess(
            f"worker-{i}",
            [*common, "--state-dir", str(work / f"{mode}-{i}")],
            work / f"{mode}-worker-{i}.log",
        )
        for i in (1, 2, 3)
    ]
    tasks = args.partitions
    stop_load = asyncio.Event()
    arrivals = Arrivals()
    background: list[asyncio.Task[None]] = []
    try:
        started = time.time()
        for worker in workers[:2]:
            await worker.start()
        await until(lambda: settled(workers[:2], tasks, started), 90, "2 workers, 6 tasks each")
        await build_state(mode, workers[:2], bootstrap, prefix, args)
        background.append(asyncio.create_task(arrivals.read(bootstrap, out, tasks, stop_load)))
        background.append(
            asyncio.create_task(produce_load(bootstrap, prefix, args.load, stop_load))
        )
        await asyncio.sleep(STEADY_S)
        t0 = time.time()
        steady_gap = max(arrivals.longest_gap(p, t0 - STEADY_S + 1, t0) for p in range(tasks))
        await workers[2].start()
        within = args.stable_within + (60 if mode == "probing" else 0)
        await until(lambda: settled(workers, tasks, t0), within, "3 workers, 4 tasks each")
        stable = time.time()
        await asyncio.sleep(AFTER_STABLE_S)
        result = measure(
            mode, workers, arrivals, window=(t0, stable), steady_gap=steady_gap, tasks=tasks
        )
        if args.keep_logs:
            gaps = arrivals.where(result.moved, t0, stable + AFTER_STABLE_S)
            print(f"[{mode}] moved tasks' longest output gaps: {gaps}")
        return result
    except TimeoutError as error:
        print(f"[{mode}] {error}")
        for worker in workers:
            print(f"--- {worker.name} (latest {worker.latest})\n{worker.log_tail()}")
        raise
    finally:
        stop_load.set()
        await asyncio.gather(*background, return_exceptions=True)
        await asyncio.gather(*(w.stop() for w in workers))
        if args.keep_logs:
            for worker in (w for w in workers if w.log.exists()):
                shutil.copy(worker.log, Path(args.keep_logs) / worker.log.name)


async def build_state(
    mode: str, workers: list[RunnerProcess], bootstrap: str, prefix: str, args: argparse.Namespace
) -> None:
    """Unclicked impressions, two changelog records of state each, processed and flushed."""
    impressions = args.state_per_task // 2 * args.partitions
    started = time.monotonic()
    await produce_state(bootstrap, topic_names(prefix)[0], impressions, args.build_rate)

    def built() -> bool:
        latest = [w.latest for w in workers]
        return all(s is not None and s.buffered == 0 for s in latest) and (
            sum(s.records_in for s in latest if s is not None) >= impressions
        )

    await until(built, 600, "state built")
    await asyncio.sleep(2.5)  # two commit intervals: every changelog write flushed
    sizes = await state_sizes(bootstrap, prefix, args.partitions)
    print(
        f"[{mode}] state: {impressions:,} impressions -> changelog records per task "
        f"min {min(sizes):,} median {statistics.median(sizes):,.0f} max {max(sizes):,} "
        f"(built in {time.monotonic() - started:.0f} s)"
    )


def measure(
    mode: str,
    workers: list[RunnerProcess],
    arrivals: Arrivals,
    *,
    window: tuple[float, float],
    steady_gap: float,
    tasks: int,
) -> Result:
    """The figures of one scale-out, from the third worker's start to stable (`window`)."""
    t0, stable = window
    initial, moves = owners_over_time(workers, t0)
    by_name = {w.name: w for w in workers}
    final = {task: w.name for w in workers if w.latest for task in w.latest.running}
    moved = {task: name for task, name in final.items() if initial.get(task) != name}
    at_handoff, while_paused = [], []
    for task, name in moved.items():
        new, old = by_name[name], by_name[initial[task]]
        stopped = next((s.t for s in old.history if s.t > t0 and task not in s.active), t0)
        ran = next((s.t for s in new.history if s.t > t0 and task in s.running), stable)
        while_paused.append(new.restored_between(task, stopped, ran))
        at_handoff += [
            e["restored"]
            for e in new.restores
            if e["event"] == "restored" and e["task"] == task and e["t"] > t0
        ]
    newcomer = workers[2].history
    return Result(
        mode,
        stable - t0,
        moves,
        {p: arrivals.longest_gap(p, t0, stable + AFTER_STABLE_S) for p in range(tasks)},
        {TaskId.parse(task).partition for task in moved},
        at_handoff,
        while_paused,
        steady_gap,
        next((s.t - t0 for s in newcomer if s.warmup), None),
        next((s.t - t0 for s in newcomer if s.running), None),
        max((s.stall for w in workers for s in w.history if t0 < s.t <= stable), default=0.0),
    )


def describe(values: list[float]) -> str:
    if not values:
        return f"{'-':>6} / {'-':>6}"
    return f"{statistics.median(values):6.2f} / {max(values):6.2f}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def records(values: list[int]) -> str:
    return f"{sum(values):,} (max {max(values, default=0):,}/task)"


def report(results: list[Result], args: argparse.Namespace) -> None:
    if not results:
        print("no mode became stable in time: nothing to compare")
        return
    print(
        f"\n2 -> 3 workers, {args.partitions} tasks, ~{args.state_per_task:,} changelog records "
        f"of state per task, load {args.load} joined pairs/s, max_warmup_replicas "
        f"{args.max_warmup_replicas}, standby replicas {args.standby_replicas}; seconds from "
        "the third worker's start"
    )
    print(
        f"{'mode':<10}{'stable':>7}{'moves':>6}{'warm-ups':>9}{'hand-off':>9}"
        f"{'pause all med/max':>19}{'moved med/max':>17}{'stayed max':>11}{'loop stall':>11}"
    )
    for r in results:
        moved = [r.pauses[p] for p in sorted(r.moved)]
        stayed = [g for p, g in r.pauses.items() if p not in r.moved]
        print(
            f"{r.mode:<10}{r.stable_s:7.1f}{r.moves:>6}{seconds(r.learner_at):>9}"
            f"{seconds(r.handoff_at):>9}{describe(list(r.pauses.values())):>19}"
            f"{describe(moved):>17}{max(stayed, default=0.0):11.2f}{r.stall:11.2f}"
        )
    print(f"\n{'mode':<10}{'restored at hand-off':>30}{'restored while paused':>32}")
    for r in results:
        print(
            f"{r.mode:<10}{records(r.restored_at_handoff):>30}"
            f"{records(r.restored_while_paused):>32}"
        )
    steady = max(r.steady_gap for r in results)
    print(f"steady state before the scale-out: longest output gap of any task {steady:.2f} s")
    base = next((r for r in results if r.mode == "restore"), None)
    for r in results:
        if base is None or r is base:
            continue
        ratio = max(r.pauses.values()) / max(base.pauses.values())
        print(
            f"{r.mode}: longest pause {ratio:.2f} x restore-on-assignment's; "
            f"stable after {r.stable_s:.1f} s against {base.stable_s:.1f} s"
        )


async def main(args: argparse.Namespace) -> None:
    for kind in args.brokers.split(","):
        results = []
        with (
            tempfile.TemporaryDirectory(prefix="streamjoin-scale-") as work,
            local_broker(kind) as broker,
        ):
            print(f"\n== {broker.name} broker {broker.bootstrap}, cpus={os.cpu_count()}")
            for mode in args.modes.split(","):
                with contextlib.suppress(TimeoutError):
                    results.append(await run_mode(mode, broker.bootstrap, args, Path(work)))
        report(results, args)


def arguments() -> argparse.ArgumentParser:
    """The options of this benchmark (bench/brokers.py runs it with them too)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--state-per-task", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=12, help="tasks (a multiple of 6)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--load", type=int, default=300, help="joined pairs per second")
    parser.add_argument(
        "--build-rate", type=int, default=12_000, help="impressions/s fed to build the state"
    )
    parser.add_argument("--max-warmup-replicas", type=int, default=4)
    parser.add_argument(
        "--standby-replicas", type=int, default=0, help="with standbys, moves warm up in them"
    )
    parser.add_argument("--stable-within", type=float, default=180.0)
    parser.add_argument("--keep-logs", help="copy the workers' logs into this directory")
    parser.add_argument(
        "--brokers", default="tansu", help=f"comma-separated, in order: {', '.join(BROKER_KINDS)}"
    )
    return parser


if __name__ == "__main__":
    asyncio.run(main(arguments().parse_args()))
