"""The brokers side by side in one run: on each of Tansu and Apache Kafka (--brokers, in turn),
what the broker costs streamjoin at a scale-out and in steady processing, then one table of both.

For each broker, started once (its start time, until it answers ApiVersions, is printed):
  scale-out  - bench/scale_out.py's 2 -> 3 workers under load with stateful tasks (--modes,
               catch-up by default): the hand-off pause of a moved task (the longest gap between
               its outputs from the third worker's start until stable, median / max over the
               moved tasks), the rebalance gap of the unmoved ones (max), and the time to stable;
  throughput - bench/join_throughput.py's worker on the ad join against the raw aiokafka pipe on
               the same records, in turns (--rounds), without faust: median rounds' records/s
               and worker / pipe.
Each part prints its own full report as it goes. The goal on Apache Kafka: hand-off pause < 2 s.
About 4 minutes per broker on 2 cores with the defaults.

    python bench/brokers.py [--brokers tansu,kafka] [--modes catch-up] [--state-per-task 20000]
                            [--impressions 50000] [--rounds 3] [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import join_throughput
import scale_out
from contenders import median_round

from streamjoin.broker import BROKER_KINDS, local_broker


@dataclass
class BrokerFigures:
    kind: str
    name: str
    start_s: float
    scale_outs: list[scale_out.Result] = field(default_factory=list)
    worker_rate: float = 0.0
    pipe_rate: float = 0.0


async def measure(
    kind: str, scale_args: argparse.Namespace, tput_args: argparse.Namespace
) -> BrokerFigures:
    """Both parts on one freshly started broker of that kind."""
    broker = local_broker(kind)
    with tempfile.TemporaryDirectory(prefix="streamjoin-brokers-") as work, broker:
        figures = BrokerFigures(kind, broker.name, broker.started_in or 0.0)
        print(f"\n== {broker.name} broker {broker.bootstrap}: started in {figures.start_s:.1f} s")
        for mode in scale_args.modes.split(","):
            with contextlib.suppress(TimeoutError):
                result = await scale_out.run_mode(mode, broker.bootstrap, scale_args, Path(work))
                figures.scale_outs.append(result)
        scale_out.report(figures.scale_outs, scale_args)
        print()
        throughput = Path(work) / "throughput"
        throughput.mkdir()
        runs = await join_throughput.run(broker.bootstrap, tput_args, throughput)
        figures.worker_rate = median_round(runs["worker"]).rate
        figures.pipe_rate = median_round(runs["pipe"]).rate
        return figures


def report(all_figures: list[BrokerFigures]) -> None:
    print(
        f"\n{'broker':<20}{'start':>6}{'mode':>9}{'stable':>7}{'steady':>7}"
        f"{'moved pause med/max':>21}{'unmoved max':>12}"
        f"{'worker rec/s':>13}{'pipe rec/s':>11}{'worker/pipe':>12}"
    )
    for f in all_figures:
        rows: list[scale_out.Result | None] = list(f.scale_outs) or [None]
        for r in rows:
            if r is None:
                scale = f"{'-':>9}{'-':>7}{'-':>7}{'(not stable in time)':>21}{'-':>12}"
            else:
                moved = [r.pauses[p] for p in sorted(r.moved)]
                stayed = [g for p, g in r.pauses.items() if p not in r.moved]
                pause = f"{statistics.median(moved):.2f} / {max(moved):.2f}" if moved else "- / -"
                scale = (
                    f"{r.mode:>9}{r.stable_s:7.1f}{r.steady_gap:7.2f}{pause:>21}"
                    f"{max(stayed, default=0.0):12.2f}"
                )
            print(
                f"{f.name:<20}{f.start_s:6.1f}{scale}{f.worker_rate:13,.0f}"
                f"{f.pipe_rate:11,.0f}{f.worker_rate / f.pipe_rate:12.0%}"
            )
    print(
        "seconds; steady: the longest output gap of any task before the scale-out; pauses and "
        "gaps from the third worker's start until stable"
    )


def scale_out_arguments(args: argparse.Namespace, kind: str) -> argparse.Namespace:
    """bench/scale_out.py's options for one broker (its logs, if kept, in a folder per broker)."""
    options = ["--modes", args.modes, "--state-per-task", str(args.state_per_task)]
    if args.keep_logs:
        logs = Path(args.keep_logs) / kind
        logs.mkdir(parents=True, exist_ok=True)
        options += ["--keep-logs", str(logs)]
    return scale_out.arguments().parse_args(options)


async def main(args: argparse.Namespace) -> None:
    tput_args = join_throughput.arguments().parse_args(
        ["--impressions", str(args.impressions), "--rounds", str(args.rounds), "--skip-faust"]
    )
    print(f"cpus={os.cpu_count()}")
    report(
        [
            await measure(kind, scale_out_arguments(args, kind), tput_args)
            for kind in args.brokers.split(",")
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--brokers",
        default=",".join(BROKER_KINDS),
        help=f"comma-separated, in order: {', '.join(BROKER_KINDS)}",
    )
    parser.add_argument("--modes", default="catch-up", help="scale-out modes (bench/scale_out.py)")
    parser.add_argument("--state-per-task", type=int, default=20_000)
    parser.add_argument("--impressions", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3, help="worker and pipe runs, in turns")
    parser.add_argument("--keep-logs", help="copy the scale-out workers' logs into this directory")
    asyncio.run(main(parser.parse_args()))
