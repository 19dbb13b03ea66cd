"""Records/s of one streamjoin worker on the ad join, against the limit of a Python Kafka app and
against faust-streaming, in the same run on the same broker (embedded Tansu, or Apache Kafka).

The demo's traffic (apps/ads/data.py: N impressions 10 ms apart, 30% of them clicked within a
minute) is produced in time order, before anything is timed, to three identical sets of topics
(P partitions each), one per contender:
  worker - `bench/worker_runner.py`: a streamjoin worker running apps/ads/app.py's join (left
           join, 60 s window, 5 s grace) in a process of its own;
  pipe   - (a) an aiokafka consumer -> producer loop in this process, copying every input record
           to an output topic (same producer settings as the worker);
  pipe+serde - the same loop decoding every value into the app's record type with streamjoin's
           serde and encoding it again, on the same topics: no join, no state, only what any
           Python app that reads its values pays (a reference, not a target);
  faust  - (b) the same join written by hand on faust-streaming tables (bench/faust_join_app.py),
           in a process of its own.
Each is timed from the first input record it fetched until every input record was processed and
its output acknowledged by the broker. The worker and the pipes run in turns, `--rounds` times
(the worker on a fresh topic set each round), in an order that rotates from round to round and
with a pause before each: a shared machine's slow spells vary single runs by 20-40%, and a
contender run right after the worker found the broker slower. Printed for each: the median
round's input records/s, the range over the rounds, CPU time per input record of the contender's
process (less disturbed than wall time by other processes), output records; the worker's longest
event-loop stall and whether its per-record path ran compiled; and the ratios worker/pipe
(target >= 60%; of the medians, and round by round) and worker/faust (target >= 3x). The
targets are reported, not asserted.
faust emits fewer unclicked impressions at the end of the input: its watermark is the slower
side's (see faust_join_app.py), streamjoin's stream time the faster side's.

    python bench/join_throughput.py [--impressions 100000] [--partitions 4] [--rounds 3]
                                    [--skip-faust] [--profile worker-stacks.txt]
                                    [--brokers tansu,kafka] [--unbounded]

--brokers runs the whole comparison on each broker in turn (Tansu, Apache Kafka), so the
worker/pipe ratio of each is measured in the same run.

--unbounded adds a contender: the worker again, on a topic set of its own each round, with the
memory settings from before the memory budget (bench/unbounded.py: RocksDB's per-store defaults,
no shared write-buffer limit); it prints worker / unbounded, the cost of the budget (goal: no
more than 5% slower).

--profile runs the worker's first round under `py-spy record --nonblocking` (collapsed stacks
into the file) and prints its hottest lines (compiled functions are not seen: their time shows
in their nearest Python caller). About 5 minutes on 2 cores, faust's run about half of it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ads_join import Click, Impression, generate_traffic, topic_names
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from produce import produce_all
from runner_process import terminate

from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.dsl.serdes import serde_for
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 900.0
SETTLE_S = 3.0
"""Pause before each contender, for the broker to finish what the one before left it."""


@dataclass
class Outcome:
    name: str
    records: int
    seconds: float
    cpu_seconds: float | None
    out: int | str
    longest_stall: float | None = None
    """Longest the contender's event loop ran late (the worker reports it)."""
    threads: dict[str, float] | None = None
    """CPU seconds by thread over the whole process (the worker reports it)."""
    build: str | None = None
    """Whether the per-record path ran compiled (the worker reports it)."""
    peak_rss: int | None = None
    """The process's peak resident memory in bytes (read from /proc for any contender run by
    `timed_process`, else as the worker reports it)."""

    @property
    def rate(self) -> float:
        return self.records / self.seconds


async def produce(bootstrap: str, prefixes: list[str], impressions: int) -> int:
    """The same traffic, in time order, to every prefix's input topics; returns records per set."""
    traffic = generate_traffic(impressions)
    records = [
        (isinstance(r, Click), r.auction_id.encode(), r.encode(), r.timestamp_ms)
        for r in traffic.in_time_order()
    ]
    for prefix in prefixes:
        imp, clk, _ = topic_names(prefix)
        await produce_all(
            bootstrap, ((clk if is_click else imp, *rest) for is_click, *rest in records)
        )
    return len(records)


async def topic_sets(
    bootstrap: str,
    tag: str,
    names: Sequence[str],
    *,
    rounds: int,
    partitions: int,
    impressions: int,
) -> tuple[dict[tuple[str, int], str], int]:
    """A topic set (ads_join.topic_names) per name and round, each holding the same traffic:
    (prefix by (name, round), records in each set)."""
    run = uuid.uuid4().hex[:6]
    prefixes = {(c, n): f"{tag}-{run}-{c[:4]}{n}" for c in names for n in range(rounds)}
    await ensure_topics(
        bootstrap, [TopicSpec(t, partitions) for p in prefixes.values() for t in topic_names(p)]
    )
    return prefixes, await produce(bootstrap, list(prefixes.values()), impressions)


async def pipe(
    bootstrap: str, prefix: str, partitions: int, records: int, *, transcode: bool = False
) -> Outcome:
    """(a) consume -> produce: every input record copied to the output, same partition;
    `transcode`: each value decoded into its record type and encoded again on the way."""
    imp, clk, out = topic_names(prefix)
    serdes = {imp: serde_for(Impression), clk: serde_for(Click)}
    if transcode:
        out += "-transcoded"  # created by run()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=256 * 1024
    )
    await consumer.start()
    await producer.start()
    try:
        tps = [TopicPartition(t, p) for t in (imp, clk) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        seen, started, cpu = 0, 0.0, 0.0
        deliveries = []
        while seen < records:
            batch = await consumer.getmany(timeout_ms=100, max_records=5_000)
            if batch and not seen:
                started, cpu = time.perf_counter(), time.process_time()
            for tp, fetched in batch.items():
                seen += len(fetched)
                serde = serdes[tp.topic]
                for r in fetched:
                    value = serde.serialize(serde.deserialize(r.value)) if transcode else r.value
                    deliveries.append(
                        await producer.send(
                            out,
                            value,
                            key=r.key,
                            partition=tp.partition,
                            timestamp_ms=r.timestamp,
                        )
                    )
            if len(deliveries) >= 10_000:
                await asyncio.gather(*deliveries)
                deliveries.clear()
        await asyncio.gather(*deliveries)
        return Outcome(
            "pipe+serde" if transcode else "pipe (a)",
            seen,
            time.perf_counter() - started,
            time.process_time() - cpu,
            seen,
        )
    finally:
        await producer.stop()
        await consumer.stop()


async def timed_process(
    name: str, command: list[str], env: dict[str, str], log: Path, *, exits: bool = False
) -> Outcome:
    """Run `command` until it reports {"event": "done", "first", "cpu_s", ...} on stdout;
    `exits`: it then exits by itself (let it, so that a py-spy wrapper writes its profile)."""
    with log.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env={**os.environ, **env},
            preexec_fn=die_with_parent,
        )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                line = await process.stdout.readline()
                if not line:
                    tail = (await asyncio.to_thread(log.read_text, errors="replace")).splitlines()
                    raise RuntimeError(f"{name} exited early:\n" + "\n".join(tail[-15:]))
                with contextlib.suppress(ValueError):
                    done = json.loads(line)
                    if isinstance(done, dict) and done.get("event") == "done":
                        break
        peak = peak_rss(process.pid)
    finally:
        if exits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 60)
        await terminate(process)
    return Outcome(
        name,
        done["records_in"],
        done["t"] - done["first"],
        done["cpu_s"],
        done["out"],
        done.get("longest_stall"),
        done.get("threads"),
        done.get("build"),
        done.get("peak_rss") if peak is None else peak,
    )


def peak_rss(pid: int) -> int | None:
    """Bytes: the peak resident memory of a running process so far (Linux: VmHWM)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def worker_command(
    prefix: str,
    bootstrap: str,
    state: Path,
    records: int | None,
    profile: str | None,
    *,
    unbounded: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """The worker's command line; `records`: it stops after that many (None: it runs until
    stopped); `profile`: under py-spy, writing its raw stacks there; `unbounded`: with the
    memory settings from before the budget; `extra`: further worker_runner.py options."""
    command = [
        sys.executable,
        str(HERE / "worker_runner.py"),
        prefix,
        "--bootstrap",
        bootstrap,
        "--state-dir",
        str(state),
        *([] if records is None else ["--until-records", str(records)]),
        *(["--unbounded"] if unbounded else []),
        *extra,
    ]
    if profile is None:
        return command
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    spy = [py_spy, "record", "--nonblocking", "--rate", "250", "-f", "raw", "-o", profile]
    return [*spy, "--", *command]


def hottest_lines(raw_profile: Path, top: int = 15) -> None:
    """py-spy's raw output: `frame;frame;... count`; prints the lines most often on top of the
    stack (own time) and the functions most often anywhere in it (inclusive time)."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw_profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        total += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            inclusive[frame] += int(count)
    print(f"\nworker profile: {total} samples; hottest lines (own time):")
    for frame, n in own.most_common(top):
        print(f"  {n / total:6.1%}  {frame}")
    print("hottest streamjoin frames including callees:")
    ours = [(frame, n) for frame, n in inclusive.most_common() if "streamjoin/" in frame]
    for frame, n in ours[:top]:
        print(f"  {n / total:6.1%}  {frame}")


async def run(bootstrap: str, args: argparse.Namespace, workdir: Path) -> dict[str, list[Outcome]]:
    """Every contender's rounds on this broker, printed and returned."""
    run_id = uuid.uuid4().hex[:6]
    rounds = range(1, args.rounds + 1)
    # The worker consumes a topic set of its own in every round (a new group and new state
    # each time); the pipes read theirs from the beginning again in every round.
    workers = ["worker", "unbounded"] if args.unbounded else ["worker"]
    prefixes = {f"{w}{n}": f"tput-{run_id}-{w}{n}" for w in workers for n in rounds}
    prefixes["pipe"] = f"tput-{run_id}-pipe"
    if not args.skip_faust:
        prefixes["faust"] = f"tput-{run_id}-faust"
    transcoded = topic_names(prefixes["pipe"])[2] + "-transcoded"
    await ensure_topics(
        bootstrap,
        [TopicSpec(t, args.partitions) for p in prefixes.values() for t in topic_names(p)]
        + [TopicSpec(transcoded, args.partitions)],
    )
    started = time.monotonic()
    records = await produce(bootstrap, list(prefixes.values()), args.impressions)
    took = time.monotonic() - started
    print(
        f"produced {records:,} records ({args.impressions:,} impressions + clicks) to each of "
        f"{len(prefixes)} topic sets of {args.partitions} partitions in {took:.1f} s"
    )
    runs: dict[str, list[Outcome]] = {name: [] for name in [*workers, "pipe", "pipe+serde"]}
    for n in rounds:
        # The contenders take turns, in an order that rotates from round to round, with a
        # pause between them: a slow spell of a shared machine, or the broker still busy after
        # the one before, then hits each contender alike rather than always the same one.
        state = workdir / f"worker{n}"
        command = worker_command(
            prefixes[f"worker{n}"], bootstrap, state, records, args.profile if n == 1 else None
        )
        log = workdir / f"worker{n}.log"
        contenders = {
            "worker": partial(timed_process, "worker", command, {}, log, exits=True),
            "pipe": partial(pipe, bootstrap, prefixes["pipe"], args.partitions, records),
            "pipe+serde": partial(
                pipe, bootstrap, prefixes["pipe"], args.partitions, records, transcode=True
            ),
        }
        if args.unbounded:
            unbounded = worker_command(
                prefixes[f"unbounded{n}"],
                bootstrap,
                workdir / f"unbounded{n}",
                records,
                None,
                unbounded=True,
            )
            log = workdir / f"unbounded{n}.log"
            contenders["unbounded"] = partial(
                timed_process, "unbounded", unbounded, {}, log, exits=True
            )
        order = list(contenders)
        order = order[(n - 1) % len(order) :] + order[: (n - 1) % len(order)]
        for name in order:
            await asyncio.sleep(SETTLE_S)
            runs[name].append(await contenders[name]())
        print(
            f"round {n} ({', '.join(order)}): "
            + ", ".join(f"{name} {outcomes[-1].rate:,.0f} rec/s" for name, outcomes in runs.items())
        )
    if not args.skip_faust:
        env = {
            "FAUST_BENCH_PREFIX": prefixes["faust"],
            "FAUST_BENCH_BROKER": bootstrap,
            "FAUST_BENCH_DATADIR": str(workdir / "faust"),
            "FAUST_BENCH_RECORDS": str(records),
            "FAUST_BENCH_PARTITIONS": str(args.partitions),
        }
        faust_command = [sys.executable, str(HERE / "faust_join_app.py"), "worker"]
        try:
            runs["faust"] = [
                await timed_process(
                    "faust (b)",
                    [*faust_command, "--loglevel", "warn"],
                    env,
                    workdir / "faust.log",
                )
            ]
        except (RuntimeError, TimeoutError) as error:
            print(f"faust failed: {error}")
    report(runs)
    if args.profile:
        hottest_lines(Path(args.profile))
    return runs


def median_round(outcomes: list[Outcome]) -> Outcome:
    """The round in the middle by records/s (the higher of two middles)."""
    return sorted(outcomes, key=lambda o: o.rate)[len(outcomes) // 2]


def cpu_per_record(outcome: Outcome) -> float:
    return (outcome.cpu_seconds or 0.0) / outcome.records


def report(runs: dict[str, list[Outcome]]) -> None:
    """Each contender's median round (by records/s) and its range; ratios of medians, and of
    the rounds taken pairwise (each worker round against the pipe round right after it)."""
    print(
        f"\n{'contender':<12}{'rounds':>7}{'records/s':>11}{'range':>17}"
        f"{'CPU us/rec':>12}{'output':>9}"
    )
    medians: dict[str, Outcome] = {}
    for name, outcomes in runs.items():
        median = medians[name] = median_round(outcomes)
        cpu = (
            f"{cpu_per_record(median) * 1e6:12.1f}"
            if median.cpu_seconds is not None
            else f"{'-':>12}"
        )
        rates = [o.rate for o in outcomes]
        spread = f"{min(rates):,.0f}-{max(rates):,.0f}"
        print(f"{name:<12}{len(outcomes):>7}{median.rate:>11,.0f}{spread:>17}{cpu}{median.out:>9}")
    worker = medians["worker"]
    if worker.longest_stall is not None:
        print(
            f"worker's event loop ran up to {worker.longest_stall:.1f} s late while processing "
            "(heartbeats, fetches and commits wait that long)"
        )
    if worker.build:
        print(f"worker's per-record path: {worker.build}")
    if worker.threads:
        split = ", ".join(f"{name} {cpu:.1f} s" for name, cpu in sorted(worker.threads.items()))
        print(f"worker CPU by thread, start-up included: {split}")
    paired = sorted(w.rate / p.rate for w, p in zip(runs["worker"], runs["pipe"], strict=True))
    print(
        f"worker / pipe (a):  {worker.rate / medians['pipe'].rate:5.0%}   (target >= 60%; "
        f"round by round {', '.join(f'{r:.0%}' for r in paired)})"
    )
    ratio = medians["pipe+serde"].rate / medians["pipe"].rate
    print(f"pipe+serde / pipe:  {ratio:5.0%}   (what decoding and encoding values alone leaves)")
    if "unbounded" in medians:
        unbounded = medians["unbounded"]
        paired = sorted(
            w.rate / u.rate for w, u in zip(runs["worker"], runs["unbounded"], strict=True)
        )
        print(
            f"worker / unbounded: {worker.rate / unbounded.rate:5.0%}   (memory budget's cost, "
            f"goal >= 95%; round by round {', '.join(f'{r:.0%}' for r in paired)}; CPU per "
            f"record {cpu_per_record(worker) / cpu_per_record(unbounded):.2f}x)"
        )
    if "faust" in medians:
        ratio = worker.rate / medians["faust"].rate
        print(f"worker / faust (b): {ratio:5.2f}x  (target >= 3x)")


def arguments() -> argparse.ArgumentParser:
    """The options of this benchmark (bench/brokers.py runs it with them too)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--impressions", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="worker and pipe runs, in turns")
    parser.add_argument("--skip-faust", action="store_true")
    parser.add_argument("--profile", help="py-spy raw output file for the worker")
    parser.add_argument(
        "--unbounded",
        action="store_true",
        help="also run the worker without the memory budget, as before it (a baseline)",
    )
    parser.add_argument(
        "--brokers", default="tansu", help=f"comma-separated, in order: {', '.join(BROKER_KINDS)}"
    )
    return parser


def main() -> None:
    args = arguments().parse_args()
    for kind in args.brokers.split(","):
        with (
            tempfile.TemporaryDirectory(prefix="streamjoin-tput-") as workdir,
            local_broker(kind) as broker,
        ):
            print(f"\n== {broker.name} broker {broker.bootstrap}, cpus={os.cpu_count()}")
            asyncio.run(run(broker.bootstrap, args, Path(workdir)))


if __name__ == "__main__":
    main()
