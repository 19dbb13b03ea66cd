"""streamjoin against Kafka Streams 4.4.0 on the same ad join, in the same run, on one Apache Kafka
4.4.0 broker that the bench starts: a backlog's records/s, CPU per record and peak memory, and
live traffic's end-to-end latency.

Contenders, each a process of its own with one processing thread:
  worker           - a streamjoin worker on apps/ads/app.py's join (bench/worker_runner.py);
  worker-at-commit - the same worker flushing its state only at commits, as before issue 40's
                     item 5 (runtime/process/pacing.py), live traffic only: the change's baseline;
  kafka-streams    - the same join on Kafka Streams (bench/java/AdsJoinStreams.java: left join,
                     60 s window, grace 5 s, JSON values decoded into records; commit interval
                     5 s as the worker's), built with Maven (bench/java/pom.xml) by
                     `make kafka-streams-app`.

Backlog: the demo's traffic (N impressions 10 ms apart, 30% clicked) produced in time order to
one topic set per contender and round before anything is timed; each contender is timed from
the first input record it processed until it has processed all of them (the worker: and its
output is acknowledged), in turns (`--rounds`, order alternating). Printed: median records/s,
range, CPU per input record over the same span, peak RSS; then both outputs read back: the
clicked results must be the same number (one per click). The unclicked ones (emitted once
their window has closed in stream time) are compared auction by auction: in the runs so far
Kafka Streams' were a subset of the worker's, its last ones missing (it emits unjoined
records only while processing a record, at most once per emit interval of wall-clock time,
and after the last record of a fast backlog nothing more comes).

Live: for each rate (`--rates`, records/s of impressions and clicks together) each contender
in turn (bench/live_latency.py): p50, p99, max; "bump": the worst second's p99 over the median
second's; "commit": the same with the arrivals folded onto the 5 s commit interval, tenths of
it (a stall at every commit stands out there, random ones do not); CPU per input record, peak
RSS, whether it kept up; for the worker also "base", its RSS before any traffic (the
interpreter and the libraries), and "budget", the most its memory budget counted: peak RSS
within base + budget is issue 40's goal for memory.

Every figure is from this run; the machine's load is printed with them (latency tails need a
quiet machine: on a shared one they measure the machine as much as the contenders).

    python bench/vs_kafka_streams.py [--impressions 100000] [--rounds 3] [--partitions 4]
                                     [--rates 2000,6000] [--warmup-s 20] [--live-s 30]
                                     [--contenders worker,worker-at-commit,kafka-streams]
                                     [--skip-backlog] [--skip-live] [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ads_join import topic_names
from aiokafka import AIOKafkaConsumer, TopicPartition
from contenders import (
    SETTLE_S,
    Outcome,
    cpu_per_record,
    median_round,
    timed_process,
    topic_sets,
    worker_command,
)
from kafka_streams_app import app_classpath, streams_command
from live_latency import Live, run_live

from streamjoin.broker import KafkaBroker

CONTENDERS = ("worker", "kafka-streams")
LIVE_CONTENDERS = ("worker", "worker-at-commit", "kafka-streams")
MIB = 1 << 20


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def mib(size: int | None) -> str:
    return "?" if size is None else f"{size / MIB:,.0f}"


@dataclass
class Results:
    """What a contender's output topic holds, read to its end."""

    clicked: int = 0
    unclicked: dict[str, int] = field(default_factory=dict)
    """Auction id -> timestamp (ms) of each unclicked result."""


async def read_results(bootstrap: str, topic: str, partitions: int) -> Results:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        results = Results()
        while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            for records in (await consumer.getmany(timeout_ms=1_000)).values():
                for r in records:
                    value = json.loads(r.value)
                    if value["clicked"]:
                        results.clicked += 1
                    else:
                        results.unclicked[value["auction_id"]] = r.timestamp
        return results
    finally:
        await consumer.stop()


# -- backlog ------------------------------------------------------------------------------------


async def backlog(bootstrap: str, args: argparse.Namespace, work: Path, classpath: str) -> None:
    prefixes, records = await topic_sets(
        bootstrap,
        "ks",
        CONTENDERS,
        rounds=args.rounds,
        partitions=args.partitions,
        impressions=args.impressions,
    )
    print(f"backlog: {records:,} records to each of {len(prefixes)} topic sets ({load()})")
    runs: dict[str, list[Outcome]] = {c: [] for c in CONTENDERS}
    for n in range(args.rounds):
        for contender in CONTENDERS if n % 2 == 0 else CONTENDERS[::-1]:
            await asyncio.sleep(SETTLE_S)
            prefix = prefixes[contender, n]
            state = work / prefix
            if contender == "worker":
                command = worker_command(prefix, bootstrap, state, records, None)
            else:
                command = streams_command(
                    classpath, prefix, bootstrap, state, "--until-records", str(records)
                )
            outcome = await timed_process(contender, command, {}, work / f"{prefix}.log")
            runs[contender].append(outcome)
            print(
                f"round {n + 1}: {contender:<14}{outcome.rate:10,.0f} records/s  "
                f"{cpu_per_record(outcome) * 1e6:6.1f} us/record CPU  "
                f"peak RSS {mib(outcome.peak_rss)} MiB  ({load()})"
            )
    print(f"\n{'contender':<15}{'records/s':>11}{'range':>17}{'CPU us/rec':>12}{'RSS MiB':>9}")
    medians = {c: median_round(o) for c, o in runs.items()}
    for contender, outcomes in runs.items():
        rates = [o.rate for o in outcomes]
        median = medians[contender]
        print(
            f"{contender:<15}{median.rate:>11,.0f}{f'{min(rates):,.0f}-{max(rates):,.0f}':>17}"
            f"{cpu_per_record(median) * 1e6:>12.1f}{mib(median.peak_rss):>9}"
        )
    worker, streams = medians["worker"], medians["kafka-streams"]
    pairwise = [w.rate / s.rate for w, s in zip(runs["worker"], runs["kafka-streams"], strict=True)]
    rss = [o.peak_rss for o in (worker, streams)]
    print(
        f"worker / kafka-streams: {worker.rate / streams.rate:.2f}x records/s "
        f"(rounds {', '.join(f'{r:.2f}' for r in pairwise)}), "
        f"{cpu_per_record(streams) / cpu_per_record(worker):.2f}x less CPU per record"
        + (f", {rss[1] / rss[0]:.2f}x less memory" if rss[0] and rss[1] else "")
    )
    outputs = {
        c: await read_results(bootstrap, topic_names(prefixes[c, 0])[2], args.partitions)
        for c in CONTENDERS
    }
    compare_outputs(outputs["worker"], outputs["kafka-streams"])


def compare_outputs(worker: Results, streams: Results) -> None:
    """Clicked results must be equal in number; unclicked ones: which each has that the other
    has not, and the event times (s from the earliest unclicked result) they span."""
    equal = "EQUAL" if worker.clicked == streams.clicked else "DIFFER"
    print(
        f"outputs (round 1): worker {worker.clicked:,} clicked + {len(worker.unclicked):,} "
        f"unclicked, kafka-streams {streams.clicked:,} clicked + {len(streams.unclicked):,} "
        f"unclicked: clicked {equal}"
    )
    every = [*worker.unclicked.values(), *streams.unclicked.values()]
    start = min(every, default=0)
    for name, mine, other in (
        ("worker", worker.unclicked, streams.unclicked),
        ("kafka-streams", streams.unclicked, worker.unclicked),
    ):
        only = [ts for auction, ts in mine.items() if auction not in other]
        span = (
            f", event times {(min(only) - start) / 1000:,.0f}-{(max(only) - start) / 1000:,.0f} s"
            if only
            else ""
        )
        print(f"  unclicked only from {name}: {len(only):,}{span}")


# -- live traffic -------------------------------------------------------------------------------


def live_command(
    contender: str,
    prefix: str,
    bootstrap: str,
    state: Path,
    classpath: str,
    *,
    memory_probe: bool,
) -> list[str]:
    if contender == "kafka-streams":
        return streams_command(classpath, prefix, bootstrap, state)
    at_commit = ["--flush-interval", "1e9"] if contender == "worker-at-commit" else []
    probe = ["--memory-probe"] if memory_probe else []
    return worker_command(
        prefix, bootstrap, state, None, None, extra=["--report-every", "5", *at_commit, *probe]
    )


def print_memory(result: Live) -> None:
    """Where a worker's memory was at its highest RSS (--memory-probe), beside the budget."""
    m = result.memory
    if m is None:
        return
    budget = sum(v for k, v in m.items() if k.startswith("budget_"))
    rss = m["rss_anon"] + m["rss_file"]
    print(
        f"{result.rate:>7,} {result.contender:<17} at peak: RSS {mib(rss)}"
        f" (file {mib(m['rss_file'])}); glibc heap {mib(m.get('glibc_heap'))} (free "
        f"{mib(m.get('glibc_heap_free'))}), mapped {mib(m.get('glibc_mapped'))}; Python arenas "
        f"{mib(m.get('python_arenas'))} (free {mib(m.get('python_free'))}); budget counted "
        f"{mib(budget)}: "
        + ", ".join(
            f"{k.removeprefix('budget_')} {mib(v)}" for k, v in m.items() if k.startswith("budget_")
        )
    )


async def live_rates(bootstrap: str, args: argparse.Namespace, work: Path, classpath: str) -> None:
    results: list[Live] = []
    chosen = [c for c in LIVE_CONTENDERS if c in args.contenders.split(",")]
    for i, rate in enumerate(int(r) for r in args.rates.split(",")):
        for contender in chosen if i % 2 == 0 else chosen[::-1]:
            prefix = f"ks-live-{uuid.uuid4().hex[:6]}-{contender[:2]}"
            result = await run_live(
                bootstrap,
                live_command(
                    contender,
                    prefix,
                    bootstrap,
                    work / prefix,
                    classpath,
                    memory_probe=args.memory_probe,
                ),
                prefix,
                contender=contender,
                rate=rate,
                partitions=args.partitions,
                warmup_s=args.warmup_s,
                live_s=args.live_s,
                log=work / f"{prefix}.log",
            )
            results.append(result)
            print(
                f"live {rate:>6,}/s {contender:<17} {len(result.latencies):7,} results  "
                f"p50 {result.quantile(0.5) * 1000:6.0f} ms  "
                f"p99 {result.quantile(0.99) * 1000:6.0f} ms  ({load()})"
            )
            if args.trail:
                print(
                    "  p99 per second (ms): "
                    + " ".join(f"{p * 1000:.0f}" for p in result.p99_by_second())
                )
    print(
        f"\n{'rate/s':>7} {'contender':<17}{'results':>9}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}"
        f"{'bump':>6}{'commit':>7}{'CPU us/rec':>11}{'RSS MiB':>8}{'base':>6}{'budget':>7}"
        f"{'behind s':>9}"
    )
    for r in results:
        print(
            f"{r.rate:>7,} {r.contender:<17}{len(r.latencies):>9,}{r.quantile(0.5) * 1000:>8.0f}"
            f"{r.quantile(0.99) * 1000:>8.0f}{max(r.latencies, default=float('nan')) * 1000:>8.0f}"
            f"{r.bump():>6.1f}{r.commit_bump():>7.1f}{r.cpu_per_record * 1e6:>11.1f}"
            f"{mib(r.peak_rss):>8}{mib(r.base_rss):>6}{mib(r.budgeted):>7}{r.behind:>9.1f}"
        )
    for r in results:
        print_memory(r)
    by_rate: dict[int, dict[str, Live]] = {}
    for r in results:
        by_rate.setdefault(r.rate, {})[r.contender] = r
    for rate, pair in by_rate.items():
        for baseline in ("kafka-streams", "worker-at-commit"):
            if "worker" in pair and baseline in pair:
                worker, other = pair["worker"], pair[baseline]
                print(
                    f"{rate:>7,}/s worker / {baseline}: "
                    f"p50 {worker.quantile(0.5) / other.quantile(0.5):.2f}x, "
                    f"p99 {worker.quantile(0.99) / other.quantile(0.99):.2f}x, "
                    f"CPU per record {worker.cpu_per_record / other.cpu_per_record:.2f}x"
                )


async def main(args: argparse.Namespace) -> None:
    # The results reader starts before the contender's topics have leaders: not worth a line.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-vs-ks-") as tmp,
        KafkaBroker(partitions=args.partitions) as broker,
    ):
        work = Path(tmp)
        classpath = app_classpath()
        print(f"{broker.name} on {broker.bootstrap}; cpus={os.cpu_count()}; {load()}")
        if not args.skip_backlog:
            await backlog(broker.bootstrap, args, work, classpath)
        if not args.skip_live:
            await live_rates(broker.bootstrap, args, work, classpath)
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            for log in work.glob("*.log"):  # noqa: ASYNC240 - at the end, nothing runs
                shutil.copy(log, args.keep_logs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--impressions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rates", default="2000,6000")
    parser.add_argument("--warmup-s", type=float, default=20.0)
    parser.add_argument("--live-s", type=float, default=30.0)
    parser.add_argument(
        "--contenders", default=",".join(LIVE_CONTENDERS), help="live: which to run"
    )
    parser.add_argument("--skip-backlog", action="store_true")
    parser.add_argument("--trail", action="store_true", help="live: print p99 of every second")
    parser.add_argument("--skip-live", action="store_true")
    parser.add_argument(
        "--memory-probe",
        action="store_true",
        help="live: where each worker's memory was at its highest RSS, beside its budget",
    )
    parser.add_argument("--keep-logs", type=Path, help="copy the contenders' logs here")
    asyncio.run(main(parser.parse_args()))
