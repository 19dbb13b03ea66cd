"""Pairs a join behind a key_by loses on a backlog (issue 35 item 1), for both ways of loading
it (bench/keyby_backlog_scenario.py: in time order by one producer; one input after the other
by two `streamjoin produce` calls), with default settings and the workers started first.

Printed per case: joined/expected, and the largest backward jump of timestamps in each
repartition partition (seconds). With `--baseline DIR` every case runs first on the streamjoin
in DIR (a checkout of the code before the change, e.g. `git archive <commit> | tar -x -C DIR`),
then on this one, on the same broker.

    python bench/keyby_backlog.py [--workers 1 3] [--broker tansu|kafka] [--baseline DIR]
        [--loadings 'in time order' 'one after the other'] [--logs DIR]

About 30 s per case on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import uuid
from pathlib import Path

from keyby_backlog_scenario import (
    LOADINGS,
    PARTITIONS,
    RepartitionTail,
    Scenario,
    Workers,
    load,
    make_topics,
    read_joined,
)

from streamjoin.broker import local_broker


async def run_case(
    bootstrap: str, loading: str, workers: int, source: Path | None, tmp: Path
) -> str:
    scenario = Scenario(uuid.uuid4().hex[:8])
    await make_topics(bootstrap, scenario)
    running = Workers(bootstrap, scenario.suffix, tmp, source)
    tail = RepartitionTail(bootstrap, scenario.repartition_topic)
    try:
        for n in range(workers):
            running.start(f"w{n + 1}")
        await running.until_all_run(2 * PARTITIONS, within_s=180)
        await tail.start()
        await load(bootstrap, scenario, loading)
        joined = await read_joined(bootstrap, scenario, settle_s=15, within_s=300)
    finally:
        await tail.stop()
        running.stop_all()
    late_warnings = sum(running.log(name).count("WARNING") for name in running.processes)
    jumps = " ".join(f"{j / 1000:7.1f}" for j in tail.jumps)
    return (
        f"{len(joined):5d}/{scenario.expected}  backward jumps (s) per partition: {jumps}"
        f"  ({tail.records} repartition records, {late_warnings} warnings logged)"
    )


def _workdir(keep: Path | None) -> contextlib.AbstractContextManager[str]:
    if keep is None:
        return tempfile.TemporaryDirectory()
    keep.mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(keep))


async def main(args: argparse.Namespace) -> None:
    with local_broker(args.broker) as broker, _workdir(args.logs) as tmp:
        sources: list[tuple[str, Path | None]] = [("after", None)]
        if args.baseline is not None:
            sources.insert(0, ("before", args.baseline.resolve()))
        for workers in args.workers:
            for loading in args.loadings:
                for label, source in sources:
                    case_dir = Path(tmp) / uuid.uuid4().hex[:6]
                    case_dir.mkdir()
                    line = await run_case(broker.bootstrap, loading, workers, source, case_dir)
                    print(
                        f"{args.broker} {workers} worker(s), {loading:19s} {label:6s} {line}",
                        flush=True,
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--broker", choices=("tansu", "kafka"), default="tansu")
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--logs", type=Path, default=None, help="keep the workers' logs here")
    parser.add_argument("--loadings", nargs="+", choices=LOADINGS, default=list(LOADINGS))
    asyncio.run(main(parser.parse_args()))
