"""Interactive query throughput and latency: key lookups served locally against lookups forwarded
to the key's owner, in the same run.

Two workers of a stream-table join (in this process, each with its query server) share the
table's partitions; the table holds `--keys` users. Then, for `--rounds` rounds, the same
endpoint is asked `--lookups` times, `--concurrency` at a time, for
  local     - keys whose task runs on the worker asked;
  forwarded - keys of the other worker's tasks (one more HTTP hop, inside the first lookup);
  client    - the same keys through QueryClient, which asks their owner directly once it knows it;
  as_of     - keys of a versioned table (`--versions` values each) asked of their owner, as of
              a time between its versions (the version valid then and the next one's time);
  global    - keys of a global table, answered from the worker's own copy (never forwarded).
Prints lookups/s with p50/p99 latency of each, and the ratio of each to local (the best round
of each, the one least disturbed by other processes). Client and both workers share
one event loop, so the figures are of one core doing everything.

    python bench/queries.py [--keys 2000] [--lookups 3000] [--concurrency 8] [--rounds 3]
                            [--versions 5]
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
from streamjoin.query.endpoint import QueryEndpoint
from streamjoin.query.paths import lookup_path
from streamjoin.runtime.process.worker import Worker, WorkerOptions
from streamjoin.runtime.topology.app_topology import TaskId

PARTITIONS = 4
SUBTOPOLOGIES = ("enrich", "price", "geo")
T0 = int(time.time() * 1000) - 600_000


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

    prices = app.table(f"prices-{suffix}", versioned=True, history_ms=3_600_000)
    app.join(app.topic(f"trades-{suffix}"), prices, into=f"priced-{suffix}", name="price")(max)
    countries = app.global_table(f"countries-{suffix}")
    app.join(
        app.topic(f"visits-{suffix}"), countries, key=lambda v: v, into=f"geo-{suffix}", name="geo"
    )(max)
    return app


TOPICS = ("views", "users", "out", "prices", "trades", "priced", "countries", "visits", "geo")


async def fill(bootstrap: str, topic: str, keys: list[str], versions: int = 1) -> None:
    """Each key `versions` times, 1 s apart from T0 on."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        for version in range(versions):
            for i, key in enumerate(keys):
                value = json.dumps({"name": key, "n": i, "v": version, "bio": "x" * 100}).encode()
                await producer.send(
                    topic, value, key=key.encode(), timestamp_ms=T0 + 1_000 * version
                )
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


def ready(worker: Worker, endpoint: QueryEndpoint) -> bool:
    """Runs a task of the stream-table join (local and forwarded lookups are of its table) and
    knows where every task is."""
    queries, manager = endpoint.server, worker.manager
    return (
        queries is not None
        and manager is not None
        and len(queries.service.placements()) == PARTITIONS * len(SUBTOPOLOGIES)
        and any(
            a.running is not None for t, a in manager.active.items() if t.subtopology == "enrich"
        )
    )


def report(best: dict[str, Figures]) -> None:
    for mode, figures in best.items():
        print(
            f"{mode:>9}: {figures.per_second:8.0f} lookups/s  "
            f"p50 {figures.p50_ms:6.2f} ms  p99 {figures.p99_ms:6.2f} ms"
        )
    base = best["local"].per_second
    print(
        f"ratio forwarded/local: {best['forwarded'].per_second / base:.2f}; "
        f"client (owner asked directly)/local: {best['client'].per_second / base:.2f}; "
        f"as_of/local: {best['as_of'].per_second / base:.2f}; "
        f"global/local: {best['global'].per_second / base:.2f}"
    )


async def answered(
    session: aiohttp.ClientSession, url: str, store: str, keys: list[str], params: dict[str, str]
) -> None:
    """Once every key is restored and answered (before timing)."""
    for key in keys:
        while True:
            async with session.get(url + lookup_path(store, key), params=params) as response:
                if response.status == 200:
                    break
            await asyncio.sleep(0.1)


async def run(bootstrap: str, args: argparse.Namespace, workdir: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    await ensure_topics(bootstrap, [TopicSpec(f"{t}-{suffix}", PARTITIONS) for t in TOPICS])
    users = [f"user-{i}" for i in range(args.keys)]
    await fill(bootstrap, f"users-{suffix}", users)
    await fill(bootstrap, f"prices-{suffix}", users, args.versions)
    await fill(bootstrap, f"countries-{suffix}", users)
    app = make_app(suffix)
    endpoints = [QueryEndpoint(0) for _ in range(2)]
    workers = [
        Worker(
            app,
            WorkerOptions(bootstrap=bootstrap, state_dir=workdir / name, commit_interval_s=1.0),
            services=[endpoint],
        )
        for name, endpoint in zip(("a", "b"), endpoints, strict=True)
    ]
    running = [asyncio.create_task(w.run()) for w in workers]
    try:
        for _ in range(600):
            if all(ready(w, e) for w, e in zip(workers, endpoints, strict=True)):
                break
            await asyncio.sleep(0.2)
        else:
            raise SystemExit("the workers did not both run join tasks within 2 minutes")
        first, queries = workers[0], endpoints[0].server
        assert queries is not None and first.manager is not None
        url = queries.service.url
        mine = {t for t, a in first.manager.active.items() if a.running is not None}
        store, prices, countries = (f"{t}-{suffix}" for t in ("users", "prices", "countries"))

        def task(join: str, key: str) -> TaskId:
            return TaskId(join, partition_for_key(key.encode(), PARTITIONS))

        local = [k for k in users if task("enrich", k) in mine]
        remote = [k for k in users if task("enrich", k) not in mine]
        placements = queries.service.placements()
        price_owner = {k: placements[task("price", k)].active or url for k in users}
        as_of = {"as_of": str(T0 + 1_000 * (args.versions // 2) + 500)}
        async with aiohttp.ClientSession() as session:

            def asking(
                name: str, owners: dict[str, str] | None = None, **params: str
            ) -> Callable[[str], Awaitable[None]]:
                """Lookups of `name` asked of `url`, or of each key's owner in `owners`."""

                async def ask(key: str) -> None:
                    where = url if owners is None else owners[key]
                    async with session.get(where + lookup_path(name, key), params=params) as answer:
                        assert answer.status == 200, await answer.text()
                        await answer.read()

                return ask

            last = {"as_of": str(T0 + 1_000 * (args.versions - 1))}
            for name, params in ((store, {}), (prices, last), (countries, {})):
                await answered(session, url, name, users, params)  # (forwarded if need be)

            http = asking(store)

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
                        ("as_of", asking(prices, price_owner, **as_of), users),
                        ("global", asking(countries), users),
                    ):
                        figures = await measure(ask, keys, args.lookups, args.concurrency)
                        if mode not in best or figures.per_second > best[mode].per_second:
                            best[mode] = figures
        report(best)
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
    parser.add_argument("--versions", type=int, default=5)
    args = parser.parse_args()
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as workdir:
        print(f"embedded broker {broker.bootstrap}, cpus={os.cpu_count()}")
        asyncio.run(run(broker.bootstrap, args, Path(workdir)))


if __name__ == "__main__":
    main()
