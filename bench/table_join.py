"""Updates/s of a table-table join in a streamjoin worker against the raw pipe, in the same run
on the same embedded broker.

N updates (JSON values, K keys drawn at random, on two tables, timestamps increasing) are
produced before anything is timed to two identical topic sets (P partitions each):
  worker - an outer table-table join of the two tables in a streamjoin worker in this process:
           every update stores the side's value, looks up the other side's and emits one
           result (outer, no deletes: always a result);
  pipe   - bench/join_throughput.py's aiokafka consumer -> producer loop copying every input
           record to an output topic, the limit of any Python Kafka app.
Each is timed from its first fetched record until every update's output was sent and
acknowledged; they run in turns, `--rounds` times, in an order that rotates. Printed: updates/s
of each round, the medians, and the ratio worker / pipe of the medians.

    python bench/table_join.py [--updates 50000] [--keys 5000] [--partitions 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ads_join import topic_names
from contenders import SETTLE_S, TIMEOUT_S, Outcome, pipe
from produce import produce_all

from streamjoin import App
from streamjoin.broker import EmbeddedBroker
from streamjoin.compiled import build_description
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.process.worker import Worker, WorkerOptions


def make_app(prefix: str, partitions: int) -> App:
    """The join over `topic_names(prefix)` (the pipe's topic names): users, accounts, output."""
    users, accounts, out = topic_names(prefix)
    app = App(prefix, commit_interval_s=1.0)

    @app.join(
        app.table(users, partitions=partitions),
        app.table(accounts, partitions=partitions),
        how="outer",
        into=out,
    )
    def user_account(user: dict[str, int] | None, account: dict[str, int] | None) -> Any:
        return {"user": user and user["v"], "account": account and account["v"]}

    return app


async def produce(bootstrap: str, prefixes: list[str], updates: int, keys: int) -> None:
    rng = random.Random(7)
    t0 = int(time.time() * 1000) - updates
    records = [
        (rng.random() < 0.5, f"k{rng.randrange(keys)}".encode(), json.dumps({"v": i}).encode())
        for i in range(updates)
    ]
    for prefix in prefixes:
        users, accounts, _ = topic_names(prefix)
        await produce_all(
            bootstrap,
            (
                (users if left else accounts, key, value, t0 + i)
                for i, (left, key, value) in enumerate(records)
            ),
        )


async def until(condition: Callable[[], bool], what: str) -> None:
    """Poll the worker's counters (it has no events for them); fail instead of hanging."""
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not reach {what} within {TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.01)


async def worker_run(
    bootstrap: str, prefix: str, partitions: int, updates: int, state: Path
) -> Outcome:
    worker = Worker(
        make_app(prefix, partitions), WorkerOptions(bootstrap=bootstrap, state_dir=state)
    )
    running = asyncio.create_task(worker.run())
    try:
        await worker.started.wait()
        manager, sink = worker.manager, worker.sink
        assert manager is not None and sink is not None
        out = topic_names(prefix)[2]
        await until(lambda: sum(manager.records_in.values()) > 0, "a first record")
        started, cpu = time.perf_counter(), time.process_time()
        await until(lambda: sink.sent[out] >= updates, f"{updates:,} outputs")
        await sink.flush()
        return Outcome(
            "worker",
            updates,
            time.perf_counter() - started,
            time.process_time() - cpu,
            sink.sent[out],
        )
    finally:
        worker.stop()
        await running


async def run(bootstrap: str, args: argparse.Namespace, workdir: Path) -> None:
    run_id = uuid.uuid4().hex[:6]
    rounds = range(1, args.rounds + 1)
    prefixes = {n: (f"tables-{run_id}-w{n}", f"tables-{run_id}-p{n}") for n in rounds}
    names = [t for pair in prefixes.values() for p in pair for t in topic_names(p)]
    await ensure_topics(bootstrap, [TopicSpec(t, args.partitions) for t in names])
    await produce(
        bootstrap, [p for pair in prefixes.values() for p in pair], args.updates, args.keys
    )
    print(
        f"produced {args.updates:,} updates of {args.keys:,} keys to {2 * args.rounds} topic sets"
    )
    runs: dict[str, list[Outcome]] = {"worker": [], "pipe": []}
    for n in rounds:
        worker_prefix, pipe_prefix = prefixes[n]
        order = ["worker", "pipe"] if n % 2 else ["pipe", "worker"]
        for name in order:
            await asyncio.sleep(SETTLE_S)
            if name == "worker":
                outcome = await worker_run(
                    bootstrap, worker_prefix, args.partitions, args.updates, workdir / worker_prefix
                )
            else:
                outcome = await pipe(bootstrap, pipe_prefix, args.partitions, args.updates)
            runs[name].append(outcome)
        print(
            f"round {n}: "
            + ", ".join(f"{name} {runs[name][-1].rate:,.0f} updates/s" for name in runs)
        )
    medians = {name: statistics.median(o.rate for o in outcomes) for name, outcomes in runs.items()}
    for name, outcomes in runs.items():
        cpu = statistics.median(o.cpu_seconds or 0.0 for o in outcomes) / args.updates * 1e6
        print(f"{name:>7}: {medians[name]:,.0f} updates/s (median), {cpu:.0f} µs CPU per update")
    print(f"worker / pipe: {medians['worker'] / medians['pipe']:.0%} ({build_description()})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--updates", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bootstrap", help="an existing broker (default: the embedded one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="streamjoin-table-bench-") as tmp:
        if args.bootstrap:
            asyncio.run(run(args.bootstrap, args, Path(tmp)))
            return
        with EmbeddedBroker() as broker:
            asyncio.run(run(broker.bootstrap, args, Path(tmp)))


if __name__ == "__main__":
    main()
