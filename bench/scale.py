"""How a worker's costs grow with its partitions and with its window state (issue 40 item 6).

Partitions per worker (--partitions 8,64; each count a topic set and app of its own):
  throughput  one worker (bench/worker_runner.py) joins a backlog of the ad join spread over
              the partitions: records/s, CPU per record, peak RSS; against the aiokafka
              consume->produce pipe (join_throughput.py's) on the same records in the same run;
  rebalance   a worker with an empty state dir restores those tasks and runs them all; then a
              second worker joins: seconds from its start until each runs half of the tasks
              with no warm-up left, and per moved task its hand-off pause, from the old owner
              no longer running it to the new owner running it (as the workers report their
              roles, every 50 ms); the first worker's peak RSS.
Window state (--state-gb 0.1,1; one partition, 100-byte values):
  restore     a window store's changelog of that size restored by StateManager, against an
              aiokafka consumer reading the same changelog with the same fetch settings
              (bench/restore.py's), --reads times each, in turns; and after each restore
              the wait until RocksDB has compacted the level-0 files it wrote (the task
              runs only then: state/stores/bulk_load.py);
  restart     the ad join with that much state in its impressions store (written to its
              changelog as the store writes it, event times within its window): a worker
              started on an empty state dir (a new machine), then again on its own state dir
              (a restart); each time seconds from its start to the first joined output of a
              live trickle of pairs, and its RSS at that moment.
Each figure is the median over --rounds (and --reads) with its range. On a shared 2-core
machine (load average 15-25) the defaults take about 20 minutes; 512 partitions (--partitions
8,64,512) add about 4 minutes on a quiet one; 10 GB of state (--state-gb 10) would take over an
hour.

    python bench/scale.py [--partitions 8,64] [--impressions 30000] [--state-gb 0.1,1]
                          [--rounds 1] [--reads 3] [--broker kafka|tansu]
                          [--skip-partitions|--skip-state] [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from ads_join import AD_WINDOW, make_app, topic_names
from aiokafka import AIOKafkaProducer
from contenders import pipe, produce, timed_process, worker_command
from restore import KEYS, VALUE, fill, raw_read, restore
from runner_process import RunnerProcess, keep_logs, rss_bytes, settled, until
from scale_out_traffic import LOAD_START_MS, Arrivals, produce_load

from streamjoin import JoinWindows
from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.state import ReaderConfig, StoreSpec, changelog_topic, ensure_changelogs
from streamjoin.state.stores.encoding import window_changelog_key

S = TypeVar("S")
R = TypeVar("R")

MIB = 1024 * 1024
WINDOW_AFTER_MS = 3_600_000
"""The restart scenario's join window: an hour, so that the state written for it stays live."""
STATE_SPAN_MS = 1_800_000
"""Event times of that state: the half hour before the live trickle's."""
RECORD_BYTES = len(window_changelog_key(b"key-%08d" % KEYS, 0, 0)) + len(VALUE)
"""Key and value bytes of one window changelog record (what --state-gb counts)."""


@dataclass
class PartitionRound:
    rate: float
    cpu_us: float
    peak_rss: int
    pipe_rate: float
    pipe_cpu_us: float
    restore_all_s: float
    """From the first worker's start until it runs every task (restored from the changelogs)."""
    rebalance_s: float
    pauses: list[float]
    rebalance_rss: int


@dataclass
class StateRound:
    raw_rates: list[float]
    restore_rates: list[float]
    """Of --reads raw reads and restores of one changelog, in turns."""
    compaction_s: list[float]
    """After each restore, until RocksDB had compacted what it wrote (the task then runs)."""
    cold_first_output_s: float
    cold_rss: int
    warm_first_output_s: float
    warm_rss: int


def spread(values: list[float], unit: str = "", scale: float = 1.0, digits: int = 2) -> str:
    """'median (min-max)' of the values, each multiplied by `scale`."""
    scaled = [v * scale for v in values]
    if not scaled:
        return "-"
    median = statistics.median(scaled)
    if len(scaled) == 1:
        return f"{median:,.{digits}f}{unit}"
    return f"{median:,.{digits}f}{unit} ({min(scaled):,.{digits}f}-{max(scaled):,.{digits}f})"


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


async def partition_round(
    bootstrap: str, partitions: int, args: argparse.Namespace, work: Path
) -> PartitionRound:
    prefix = f"scale-{uuid.uuid4().hex[:6]}-p{partitions}"
    await ensure_topics(bootstrap, [TopicSpec(t, partitions) for t in topic_names(prefix)])
    records = await produce(bootstrap, [prefix], args.impressions)
    command = worker_command(prefix, bootstrap, work / f"{prefix}-tput", records, None)
    worker = await timed_process("worker", command, {}, work / f"{prefix}-tput.log", exits=True)
    baseline = await pipe(bootstrap, prefix, partitions, records)
    common = [prefix, "--bootstrap", bootstrap]
    runners = [
        RunnerProcess(
            f"worker-{i}",
            [*common, "--state-dir", str(work / f"{prefix}-{i}")],
            work / f"{prefix}-{i}.log",
        )
        for i in (1, 2)
    ]
    try:
        first, second = runners
        started = time.time()
        await first.start()
        await until(lambda: settled([first], partitions, started), args.within, "one worker")
        restore_all = time.time() - started
        joined = time.time()
        await second.start()
        await until(lambda: settled(runners, partitions, joined), args.within, "two workers")
        rebalance = time.time() - joined
        rss = rss_bytes(first.pid, "VmHWM")
        pauses = handoff_pauses(first, second, joined)
    except TimeoutError:
        for runner in runners:
            print(f"--- {runner.name} (latest {runner.latest})\n{runner.log_tail()}")
        raise
    finally:
        await asyncio.gather(*(r.stop() for r in runners))
    return PartitionRound(
        worker.rate,
        (worker.cpu_seconds or 0.0) / worker.records * 1e6,
        worker.peak_rss or 0,
        baseline.rate,
        (baseline.cpu_seconds or 0.0) / baseline.records * 1e6,
        restore_all,
        rebalance,
        pauses,
        rss,
    )


def handoff_pauses(old: RunnerProcess, new: RunnerProcess, since: float) -> list[float]:
    """Per task the new worker runs at the end: from `old` no longer running it to `new`
    running it, as their status lines tell."""
    assert new.latest is not None
    pauses = []
    for task in new.latest.running:
        stopped = next((s.t for s in old.history if s.t > since and task not in s.running), since)
        ran = next(s.t for s in new.history if task in s.running)
        pauses.append(max(0.0, ran - stopped))
    return pauses


def report_partitions(results: dict[int, list[PartitionRound]]) -> None:
    print(
        f"\n{'partitions':>10}{'worker rec/s':>22}{'CPU us/rec':>14}{'pipe rec/s':>22}"
        f"{'pipe CPU':>10}{'peak RSS MiB':>14}{'restore all s':>15}{'rebalance s':>13}"
        f"{'hand-off med/max s':>20}{'RSS MiB':>9}"
    )
    for partitions, rounds in results.items():
        pauses = [p for r in rounds for p in r.pauses]
        pause = f"{statistics.median(pauses):.2f}/{max(pauses):.2f}" if pauses else "-"
        print(
            f"{partitions:>10}{spread([r.rate for r in rounds], digits=0):>22}"
            f"{spread([r.cpu_us for r in rounds], digits=1):>14}"
            f"{spread([r.pipe_rate for r in rounds], digits=0):>22}"
            f"{spread([r.pipe_cpu_us for r in rounds], digits=1):>10}"
            f"{spread([r.peak_rss for r in rounds], scale=1 / MIB, digits=0):>14}"
            f"{spread([r.restore_all_s for r in rounds], digits=1):>15}"
            f"{spread([r.rebalance_s for r in rounds], digits=1):>13}{pause:>20}"
            f"{spread([r.rebalance_rss for r in rounds], scale=1 / MIB, digits=0):>9}"
        )
    counts = list(results)
    if len(counts) > 1:
        low, high = counts[0], counts[-1]
        worker = [statistics.median(r.cpu_us for r in results[c]) for c in (low, high)]
        piped = [statistics.median(r.pipe_cpu_us for r in results[c]) for c in (low, high)]
        print(
            f"CPU per record {low} -> {high} partitions: worker x{worker[1] / worker[0]:.2f}, "
            f"pipe x{piped[1] / piped[0]:.2f} (linear growth of the total cost keeps these ~1)"
        )


async def state_round(
    bootstrap: str, gb: float, args: argparse.Namespace, work: Path
) -> StateRound:
    records = int(gb * 1e9 / RECORD_BYTES)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    try:
        # The store alone: StateManager's restore against a raw read of the same changelog.
        spec = StoreSpec.window(f"win-{uuid.uuid4().hex[:6]}", retention_ms=10**12)
        await ensure_changelogs(bootstrap, "bench", {spec: 1})
        await fill(producer, spec, records)
        raw_rates, restore_rates, compactions = [], [], []
        for _ in range(args.reads):  # in turns, so that load from elsewhere hits both alike
            raw = await raw_read(bootstrap, changelog_topic("bench", spec.name), ReaderConfig())
            restored = await restore(bootstrap, producer, spec, work / "restore-state")
            assert raw.records == restored.records == records, (raw, restored)
            raw_rates.append(records / raw.seconds)
            restore_rates.append(records / restored.seconds)
            compactions.append(restored.compaction_seconds)
            print(
                f"  {gb} GB: raw {raw_rates[-1]:,.0f}/s, restore {restore_rates[-1]:,.0f}/s, "
                f"then compacted in {compactions[-1]:.1f} s"
            )
        # The ad join with that state in its impressions' window store.
        prefix = f"scale-{uuid.uuid4().hex[:6]}-state"
        window = JoinWindows(
            before=AD_WINDOW.before_ms, after=WINDOW_AFTER_MS, grace=AD_WINDOW.grace_ms
        )
        await ensure_topics(bootstrap, [TopicSpec(t, 1) for t in topic_names(prefix)])
        task = AppTopology(make_app(prefix, window=window), {"attribute": 1}).task_spec(
            TaskId("attribute", 0)
        )
        await ensure_changelogs(bootstrap, prefix, dict.fromkeys(task.stores, 1))
        impressions = next(s for s in task.stores if s.name.endswith("-left"))
        first_ms = LOAD_START_MS - STATE_SPAN_MS
        await fill(
            producer, impressions, records, app=prefix, first_ms=first_ms, span_ms=STATE_SPAN_MS
        )
    finally:
        await producer.stop()
    cold, warm = await first_outputs(bootstrap, prefix, work / prefix, args)
    return StateRound(raw_rates, restore_rates, compactions, cold[0], cold[1], warm[0], warm[1])


async def first_outputs(
    bootstrap: str, prefix: str, state_dir: Path, args: argparse.Namespace
) -> list[tuple[float, int]]:
    """(seconds from start to the first joined output, RSS then) of a worker started on an
    empty state dir, then restarted on it, with a trickle of pairs flowing meanwhile."""
    stop = asyncio.Event()
    arrivals = Arrivals()
    background = [
        asyncio.create_task(arrivals.read(bootstrap, topic_names(prefix)[2], 1, stop)),
        asyncio.create_task(produce_load(bootstrap, prefix, args.trickle, stop)),
    ]
    arguments = [prefix, "--bootstrap", bootstrap, "--state-dir", str(state_dir)]
    arguments += ["--window-after-ms", str(WINDOW_AFTER_MS)]
    outcomes = []
    try:
        for start in ("cold", "warm"):
            runner = RunnerProcess(start, arguments, state_dir.with_suffix(f".{start}.log"))
            outcomes.append(await until_first_output(runner, arrivals, args.within))
    finally:
        stop.set()
        await asyncio.gather(*background, return_exceptions=True)
    return outcomes


async def until_first_output(
    runner: RunnerProcess, arrivals: Arrivals, within: float
) -> tuple[float, int]:
    """Start `runner`; (seconds until the first output after its start arrived, its RSS then)."""
    started = time.time()
    await runner.start()

    def first() -> float | None:
        return next((t for t in arrivals.times.get(0, []) if t > started), None)

    try:
        await until(lambda: first() is not None, within, f"{runner.name} start: first output")
        return cast(float, first()) - started, rss_bytes(runner.pid)
    except TimeoutError:
        print(f"--- {runner.name} start\n{runner.log_tail()}")
        raise
    finally:
        await runner.stop()


def report_state(results: dict[float, list[StateRound]]) -> None:
    print(
        f"\n{'state GB':>9}{'raw rec/s':>30}{'restore rec/s':>30}{'ratio':>16}"
        f"{'compaction s':>20}{'first output: new machine s':>29}{'RSS MiB':>9}"
        f"{'restart s':>11}{'RSS MiB':>9}"
    )
    for gb, rounds in results.items():
        raw = [rate for r in rounds for rate in r.raw_rates]
        restored = [rate for r in rounds for rate in r.restore_rates]
        ratios = [b / a for r in rounds for a, b in zip(r.raw_rates, r.restore_rates, strict=True)]
        print(
            f"{gb:>9}{spread(raw, digits=0):>30}"
            f"{spread(restored, digits=0):>30}"
            f"{spread(ratios, '%', 100, 0):>16}"
            f"{spread([s for r in rounds for s in r.compaction_s], digits=1):>20}"
            f"{spread([r.cold_first_output_s for r in rounds], digits=1):>29}"
            f"{spread([r.cold_rss for r in rounds], scale=1 / MIB, digits=0):>9}"
            f"{spread([r.warm_first_output_s for r in rounds], digits=1):>11}"
            f"{spread([r.warm_rss for r in rounds], scale=1 / MIB, digits=0):>9}"
        )
    print("restore / raw goal: >= 90%")


async def each_size(
    sizes: list[S], rounds: int, measure: Callable[[S], Awaitable[R]], unit: str
) -> dict[S, list[R]]:
    """`measure` each size `rounds` times, in turn."""
    results: dict[S, list[R]] = {}
    for size in sizes:
        for n in range(1, rounds + 1):
            results.setdefault(size, []).append(await measure(size))
            print(f"{size} {unit}, round {n} done ({load()})", flush=True)
    return results


async def run(bootstrap: str, args: argparse.Namespace, work: Path) -> None:
    if not args.skip_partitions:
        counts = [int(p) for p in args.partitions.split(",")]
        report_partitions(
            await each_size(
                counts,
                args.rounds,
                lambda p: partition_round(bootstrap, p, args, work),
                "partitions",
            )
        )
    if not args.skip_state:
        sizes = [float(g) for g in args.state_gb.split(",")]
        report_state(
            await each_size(
                sizes, args.rounds, lambda gb: state_round(bootstrap, gb, args, work), "GB of state"
            )
        )
    print(f"\nat the end: {load()} on {os.cpu_count()} cores")


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", default="8,64", help="partition counts, in turn")
    parser.add_argument(
        "--impressions", type=int, default=30_000, help="backlog per partition count (+ clicks)"
    )
    parser.add_argument("--state-gb", default="0.1,1", help="window state sizes, in turn")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--reads", type=int, default=3, help="raw reads and restores per state size and round"
    )
    parser.add_argument("--trickle", type=int, default=20, help="live pairs/s at restarts")
    parser.add_argument("--within", type=float, default=900.0, help="seconds any step may take")
    parser.add_argument("--skip-partitions", action="store_true")
    parser.add_argument("--skip-state", action="store_true")
    parser.add_argument("--broker", default="kafka", choices=BROKER_KINDS)
    parser.add_argument("--keep-logs", help="copy the workers' logs into this directory")
    return parser


def main() -> None:
    args = arguments().parse_args()
    # Producing at once to topics just created: aiokafka logs each retry while leaders settle.
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-scale-") as work,
        local_broker(args.broker) as broker,
    ):
        print(f"{broker.name} broker {broker.bootstrap}, cpus={os.cpu_count()}, {load()}")
        try:
            with contextlib.suppress(KeyboardInterrupt):
                asyncio.run(run(broker.bootstrap, args, Path(work)))
        finally:
            if args.keep_logs:
                keep_logs(Path(work), Path(args.keep_logs))


if __name__ == "__main__":
    main()
