"""Scale-in from 3 to 2 workers under load, with stateful tasks: the output pause of the tasks
that move off the stopping worker, warm (SIGTERM drains it: it keeps running its tasks while
the others learn them, hands them over, then leaves; runtime/process/draining.py) against cold
(`--drain-timeout 0`: it leaves at once and the new owners restore what they lack), in turns on
the same broker, topics and state.

The demo's ad join (bench/scale_out.py's setup: a one-hour window, 12 tasks, S changelog
records of state per task built up front, no standbys) under a steady load of joined pairs. Each
round, for each mode: a group of its own (topics, state) of 3 workers started together with that
mode's --drain-timeout builds its state; after a few steady seconds under load the third gets
SIGTERM. From then until the two left
run every task, 6 each, with no warm-up left ("stable"): per moved task the longest gap between
its outputs (its pause), the longest gap of the tasks that stayed, the stopping worker's time
to exit, and what the new owners restored at the hand-off. Medians and ranges over the rounds,
with the load average at each; figures under load are indicative. The workers heartbeat every
0.5 s (bench/worker_runner.py), `streamjoin worker` every session timeout / 6 (1.7 s).

    python bench/scale_in.py [--rounds 3] [--state-per-task 20000] [--load 300]
                             [--drain-timeout 20] [--broker kafka] [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import scale_out
from ads_join import topic_names
from runner_process import RunnerProcess, keep_logs, settled, until
from scale_out_traffic import Arrivals, produce_load

from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.topology.app_topology import TaskId

STEADY_S = 3.0


@dataclass
class Round:
    mode: str
    load: float
    pauses: list[float]
    """Longest output gap of each task moved off the stopping worker."""
    stayed: float
    """Longest output gap of any task that stayed where it ran."""
    exit_s: float
    """SIGTERM to the stopping worker's exit."""
    stable_s: float
    restored: int
    """Records the new owners restored as actives at the hand-off (all moved tasks)."""


async def run(bootstrap: str, args: argparse.Namespace, work: Path) -> list[Round]:
    rounds: list[Round] = []
    for attempt in range(args.rounds):
        for mode in ("warm", "cold"):
            rounds.append(await run_round(bootstrap, args, work / f"{attempt}-{mode}", mode))
            print(describe_round(rounds[-1]), flush=True)
    return rounds


async def run_round(bootstrap: str, args: argparse.Namespace, work: Path, mode: str) -> Round:
    """A group of its own (app id, topics, state directories), so that the stopping worker's
    tasks have no copy elsewhere: as a group that has run for a while with no standbys."""
    prefix = f"scale-in-{uuid.uuid4().hex[:6]}"
    imp, clk, out = topic_names(prefix)
    await ensure_topics(bootstrap, [TopicSpec(t, args.partitions) for t in (imp, clk, out)])
    drain = str(args.drain_timeout if mode == "warm" else 0)
    common = [
        prefix,
        "--bootstrap",
        bootstrap,
        "--window-after-ms",
        str(scale_out.WINDOW_AFTER_MS),
        "--commit-interval",
        "1",
        "--max-warmup-replicas",
        "4",
        "--drain-timeout",
        drain,
        *scale_out.MODES["catch-up"],
    ]
    workers = three_workers(common, work)
    tasks, stop_load, arrivals = args.partitions, asyncio.Event(), Arrivals()
    background: list[asyncio.Task[None]] = []
    try:
        started = time.time()
        for w in workers:
            await w.start()
        await until(lambda: settled(workers, tasks, started), 120, "3 workers, 4 tasks each")
        await scale_out.build_state(mode, workers, bootstrap, prefix, args)
        background.append(asyncio.create_task(arrivals.read(bootstrap, out, tasks, stop_load)))
        background.append(
            asyncio.create_task(produce_load(bootstrap, prefix, args.load, stop_load))
        )
        return await scale_in(workers, arrivals, mode, tasks)
    finally:
        stop_load.set()
        await asyncio.gather(*background, return_exceptions=True)
        await asyncio.gather(*(w.stop() for w in workers))
        if args.keep_logs:
            keep_logs(work, Path(args.keep_logs) / work.name)


def three_workers(arguments: list[str], work: Path) -> list[RunnerProcess]:
    work.mkdir(parents=True)
    return [
        RunnerProcess(
            f"worker-{i}", [*arguments, "--state-dir", str(work / f"{i}")], work / f"worker-{i}.log"
        )
        for i in (1, 2, 3)
    ]


async def scale_in(
    workers: list[RunnerProcess], arrivals: Arrivals, mode: str, tasks: int
) -> Round:
    await asyncio.sleep(STEADY_S)
    stopping = workers[2]
    assert stopping.latest is not None
    moving = {TaskId.parse(t).partition for t in stopping.latest.running}
    new_owners = {w.name: len(w.restores) for w in workers[:2]}
    t0 = time.time()
    await stopping.stop()
    exited = time.time()
    await until(lambda: settled(workers[:2], tasks, exited), 240, "2 workers, 6 tasks each")
    stable = time.time()
    await asyncio.sleep(1.0)
    gaps = {p: arrivals.longest_gap(p, t0, stable + 1.0) for p in range(tasks)}
    print(f"[{mode}] moved tasks' longest output gaps: {arrivals.where(moving, t0, stable + 1.0)}")
    restored = sum(
        line["restored"]
        for w in workers[:2]
        for line in w.restores[new_owners[w.name] :]
        if line["event"] == "restored" and TaskId.parse(line["task"]).partition in moving
    )
    return Round(
        mode,
        os.getloadavg()[0],
        [gaps[p] for p in sorted(moving)],
        max((g for p, g in gaps.items() if p not in moving), default=0.0),
        exited - t0,
        stable - t0,
        restored,
    )


def describe_round(r: Round) -> str:
    return (
        f"[{r.mode}] moved {len(r.pauses)} tasks: pause median {statistics.median(r.pauses):.2f} "
        f"max {max(r.pauses):.2f} s; stayed max {r.stayed:.2f} s; exit after {r.exit_s:.1f} s, "
        f"stable after {r.stable_s:.1f} s; restored at hand-off {r.restored:,}; load {r.load:.1f}"
    )


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def report(rounds: list[Round], args: argparse.Namespace) -> None:
    print(
        f"\n3 -> 2 workers by SIGTERM, {args.partitions} tasks, ~{args.state_per_task:,} "
        f"changelog records of state per task, load {args.load} joined pairs/s, "
        f"{args.rounds} rounds; seconds, median (range) over rounds"
    )
    print(
        f"{'mode':<6}{'moved max pause':>22}{'moved median pause':>22}{'stayed max':>22}"
        f"{'exit':>20}{'restored':>10}{'load':>14}"
    )
    for mode in ("warm", "cold"):
        mine = [r for r in rounds if r.mode == mode]
        if not mine:
            continue
        loads = [r.load for r in mine]
        print(
            f"{mode:<6}{spread([max(r.pauses) for r in mine]):>22}"
            f"{spread([statistics.median(r.pauses) for r in mine]):>22}"
            f"{spread([r.stayed for r in mine]):>22}{spread([r.exit_s for r in mine]):>20}"
            f"{statistics.median([r.restored for r in mine]):>10,.0f}"
            f"{min(loads):>7.1f}-{max(loads):.1f}"
        )
    warm = [max(r.pauses) for r in rounds if r.mode == "warm"]
    cold = [max(r.pauses) for r in rounds if r.mode == "cold"]
    if warm and cold:
        print(
            f"warm / cold, median of the longest moved pause: "
            f"{statistics.median(warm) / statistics.median(cold):.2f}; goal: warm under 1 s "
            f"in every round ({sum(p < 1 for p in warm)} of {len(warm)})"
        )


async def main(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-scale-in-") as work,
        local_broker(args.broker) as broker,
    ):
        print(f"== {broker.name} broker {broker.bootstrap}, cpus={os.cpu_count()}", flush=True)
        rounds = await run(broker.bootstrap, args, Path(work))
    report(rounds, args)


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--state-per-task", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=12, help="tasks (a multiple of 6)")
    parser.add_argument("--load", type=int, default=300, help="joined pairs per second")
    parser.add_argument("--build-rate", type=int, default=12_000, help="impressions/s")
    parser.add_argument("--drain-timeout", type=float, default=20.0, help="warm mode's")
    parser.add_argument("--broker", default="kafka", choices=BROKER_KINDS)
    parser.add_argument("--keep-logs", help="copy the workers' logs into this directory")
    return parser


if __name__ == "__main__":
    asyncio.run(main(arguments().parse_args()))
