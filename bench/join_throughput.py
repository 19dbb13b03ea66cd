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
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from functools import partial
from pathlib import Path

from ads_join import topic_names
from contenders import (
    HERE,
    SETTLE_S,
    Outcome,
    cpu_per_record,
    median_round,
    pipe,
    produce,
    timed_process,
    worker_command,
)

from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics


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
