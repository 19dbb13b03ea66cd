"""Records/s of a re-keyed join against the co-partitioned join on the same data, in one run on
the same embedded broker (issue 18's goal: the re-keyed join at least 50% of the other).

The demo's traffic (apps/ads/data.py: N impressions 10 ms apart, 30% of them clicked within a
minute) is produced before anything is timed to two kinds of topic sets (P partitions each):
  co-partitioned - clicks keyed by auction id, joined as they are (bench/ads_join.py's join);
  re-keyed       - the same clicks keyed by a click id of their own, joined through
                   `clicks.key_by("auction_id")`: a stateless repartition task writes each
                   click to the repartition topic, from which the join reads it - one more
                   produce and fetch per click, through the broker.
Each round runs one worker (bench/worker_runner.py, a process of its own, a fresh topic set,
group and state) per kind, in an order that rotates from round to round, timed from its first
fetch until every input record was processed and its output acknowledged. Printed: records/s
of source records (impressions + clicks, the same count for both) for every round and the
median, CPU time per source record, and the ratio re-keyed / co-partitioned of the medians
(target >= 50%, reported, not asserted).

    python bench/rekey_throughput.py [--impressions 30000] [--partitions 4] [--rounds 2]

About 1.5 minutes on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from ads_join import Click, generate_traffic, topic_names
from contenders import SETTLE_S, Outcome, timed_process, worker_command
from produce import produce_all

from streamjoin.broker import EmbeddedBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

KINDS = ("co-partitioned", "re-keyed")


async def produce(bootstrap: str, prefixes: dict[str, str], impressions: int) -> tuple[int, int]:
    """The same traffic to every topic set, clicks keyed by auction or by a click id of their
    own; returns (source records, clicks) per set."""
    traffic = generate_traffic(impressions)
    records = list(traffic.in_time_order())
    for prefix, kind in prefixes.items():
        imp, clk, _ = topic_names(prefix)
        await produce_all(
            bootstrap,
            (
                (
                    clk if isinstance(r, Click) else imp,
                    f"click-{n}".encode()
                    if kind == "re-keyed" and isinstance(r, Click)
                    else r.auction_id.encode(),
                    r.encode(),
                    r.timestamp_ms,
                )
                for n, r in enumerate(records)
            ),
        )
    return len(records), len(traffic.clicks)


async def run(bootstrap: str, args: argparse.Namespace, workdir: Path) -> None:
    run_id = uuid.uuid4().hex[:6]
    rounds = range(1, args.rounds + 1)
    prefixes = {f"rekey-{run_id}-{kind}{n}": kind for n in rounds for kind in KINDS}
    await ensure_topics(
        bootstrap,
        [TopicSpec(t, args.partitions) for p in prefixes for t in topic_names(p)],
    )
    started = time.monotonic()
    records, clicks = await produce(bootstrap, prefixes, args.impressions)
    print(
        f"produced {records:,} records ({args.impressions:,} impressions, {clicks:,} clicks) to "
        f"each of {len(prefixes)} topic sets of {args.partitions} partitions in "
        f"{time.monotonic() - started:.1f} s"
    )
    runs: dict[str, list[Outcome]] = {kind: [] for kind in KINDS}
    for n in rounds:
        order = list(KINDS) if n % 2 else list(reversed(KINDS))
        for kind in order:
            prefix = f"rekey-{run_id}-{kind}{n}"
            # The re-keyed worker reads every click twice: from clicks, from the repartition topic.
            until = records + clicks if kind == "re-keyed" else records
            command = worker_command(prefix, bootstrap, workdir / prefix, until, None)
            if kind == "re-keyed":
                command.append("--rekey-clicks")
            await asyncio.sleep(SETTLE_S)
            outcome = await timed_process(kind, command, {}, workdir / f"{prefix}.log", exits=True)
            outcome.records = records  # source records: the same count for both kinds
            runs[kind].append(outcome)
        print(
            f"round {n} ({', '.join(order)}): "
            + ", ".join(f"{kind} {runs[kind][-1].rate:,.0f} rec/s" for kind in KINDS)
        )
    report(runs, records)


def report(runs: dict[str, list[Outcome]], records: int) -> None:
    medians = {}
    for kind, outcomes in runs.items():
        rates = [o.rate for o in outcomes]
        medians[kind] = statistics.median(rates)
        cpu = [o.cpu_seconds for o in outcomes if o.cpu_seconds is not None]
        per_record = f", {statistics.median(cpu) / records * 1e6:.0f} µs CPU per source record"
        print(
            f"{kind:>15}: {medians[kind]:,.0f} source records/s (median; "
            f"{min(rates):,.0f}-{max(rates):,.0f}){per_record if cpu else ''}; "
            f"out {outcomes[-1].out}; {outcomes[-1].build}"
        )
    ratio = medians["re-keyed"] / medians["co-partitioned"]
    verdict = "meets" if ratio >= 0.5 else "misses"
    print(f"re-keyed / co-partitioned: {ratio:.0%} ({verdict} the 50% target)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--impressions", type=int, default=30_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bootstrap", help="an existing broker (default: the embedded one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="streamjoin-rekey-bench-") as tmp:
        if args.bootstrap:
            asyncio.run(run(args.bootstrap, args, Path(tmp)))
            return
        with EmbeddedBroker() as broker:
            asyncio.run(run(broker.bootstrap, args, Path(tmp)))


if __name__ == "__main__":
    main()
