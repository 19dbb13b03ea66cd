"""Interactive query throughput and latency: key lookups served locally against lookups forwarded
to the key's owner, in the same run.

Two workers of a stream-table join (in this process, each with its query server) share the
table's partitions; the table holds `--keys` users. Then, for `--rounds` rounds, the same
endpoint is asked `--lookups` times, `--concurrency` at a time, for
  local     - keys whose task runs on the worker asked;
  forwarded - keys of the other worker's tasks (one more HTTP hop, inside the first lookup);
  client    - the same keys through QueryClient, which asks their owner directly once it knows it.
Prints lookups/s with p50/p99 latency of each, and forwarded/local and client/local ratios (the
best round of each, the one least disturbed by other processes). Client and both workers share
one event loop, so the figures are of one core doing everything.

    python bench/queries.py [--keys 2000] [--lookups 3000] [--concurrency 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
from aiokafka import AIOKafkaProducer

from streamjoin import App, QueryClient
from streamjoin.broker import EmbeddedBroker
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.query.paths import lookup_path
from streamjoin.runtime.topology import TaskId
from streamjoin.runtime.worker import Worker, WorkerOptions

PARTITIONS = 4


class Figures(NamedTuple):
    per_second: float
    p50_ms: float
    p99_ms: float


def make_app(suffix: str) -> App:
    app = App(f"qbench-{suffix}")

    @app.join(
        app.topic(f"views-{suffix}"),
        app.table(f"users-{suffix}"),
        how="left",
        into=f"out-{suffix}",
        name="enrich",
    )
    def enrich(view: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
        return view

    return app


async def fill(bootstrap: str, topic: str, keys: list[str]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        for i, key in enumerate(keys):
            value = json.dumps({"name": key, "n": i, "bio": "x" * 100}).encode()
            await producer.send(topic, value, key=key.encode())
        await producer.flush()
    finally:
        await producer.stop()


async def measure(
    ask: Callable[[str], Awaitable[None]], keys: list[str], lookups: int, concurrency: int
) -> Figures:
    latencies: list[float] = []
    queue = iter(range(lookups))

    async def lane() -> None:
        for i in queue:
            started = time.perf_counter()
            await ask(keys[i % len(keys)])
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return Figures(
        lookups / elapsed,
        1000 * statistics.median(ordered),
        1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
    )


def ready(worker: Worker) -> bool:
    """Runs a task and knows where every task is."""
    queries, manager = worker.queries, worker.manager
    return (
        queries is not None
        and manager is not None
        and len(queries.service.placements()) == PARTITIONS
        and any(a.task for a in manager.active.values())
    )


async def run(bootstrap: str, args: argparse.Namespace, workdir: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    await ensure_topics(
        bootstrap, [TopicSpec(f"{t}-{suffix}", PARTITIONS) for t in ("views", "users", "out")]
    )
    users = [f"user-{i}" for i in range(args.keys)]
    await fill(bootstrap, f"users-{suffix}", users)
    app = make_app(suffix)
    workers = [
        Worker(
            app,
            WorkerOptions(
                bootstrap=bootstrap, state_dir=workdir / name, query_port=0, commit_interval_s=1.0
            ),
        )
        for name in ("a", "b")
    ]
    running = [asyncio.create_task(w.run()) for w in workers]
    try:
        for _ in range(600):
            if all(ready(w) for w in workers):
                break
            await asyncio.sleep(0.2)
        else:
            raise SystemExit("the workers did not both run tasks within 2 minutes")
        first = workers[0]
        assert first.queries is not None and first.manager is not None
        url = first.queries.service.url
        mine = {t.partition for t, a in first.manager.active.items() if a.task}
        store = f"users-{suffix}"

        def task(key: str) -> int:
            return TaskId("enrich", partition_for_key(key.encode(), PARTITIONS)).partition

        local = [k for k in users if task(k) in mine]
        remote = [k for k in users if task(k) not in mine]
        async with aiohttp.ClientSession() as session:
            for key in users:  # every key restored and answered before timing
                while True:
                    async with session.get(url + lookup_path(store, key)) as response:
                        if response.status == 200:
                            break
                    await asyncio.sleep(0.1)

            async def http(key: str) -> None:
                async with session.get(url + lookup_path(store, key)) as response:
                    assert response.status == 200, await response.text()
                    await response.read()

            async with QueryClient([url]) as client:

                async def direct(key: str) -> None:
                    await client.get(store, key)

                for key in remote:
                    await client.get(store, key)  # learns each key's owner
                best: dict[str, Figures] = {}
                for _ in range(args.rounds):
                    for mode, ask, keys in (
                        ("local", http, local),
                        ("forwarded", http, remote),
                        ("client", direct, remote),
                    ):
                        figures = await measure(ask, keys, args.lookups, args.concurrency)
                        if mode not in best or figures.per_second > best[mode].per_second:
                            best[mode] = figures
        for mode, figures in best.items():
            print(
                f"{mode:>9}: {figures.per_second:8.0f} lookups/s  "
                f"p50 {figures.p50_ms:6.2f} ms  p99 {figures.p99_ms:6.2f} ms"
            )
        base = best["local"].per_second
        print(
            f"ratio forwarded/local: {best['forwarded'].per_second / base:.2f}; "
            f"client (owner asked directly)/local: {best['client'].per_second / base:.2f}"
        )
    finally:
        for w in workers:
            w.stop()
        await asyncio.gather(*running, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--lookups", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as workdir:
        print(f"embedded broker {broker.bootstrap}, cpus={os.cpu_count()}")
        asyncio.run(run(broker.bootstrap, args, Path(workdir)))


if __name__ == "__main__":
    main()
