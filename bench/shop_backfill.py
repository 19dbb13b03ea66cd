"""The shop demo's four joins over history (apps/shop: two key_bys, a chained join, a global
table, a foreign-key join): Spark against the workers on the same topics, and spark-stream
against Spark batch, in one run on the embedded broker.

Produces the shop demo's records for N orders (orders, payments, shipments; the order book and
the customers; the countries), then times, each as a user runs it from apps/shop (a process of
its own, Spark's start-up included, as a command pays it):
  backfill  - `streamjoin backfill app:joins` on local[2]: the four joins in one job, from the
              topics to Parquet;
  workers   - one `streamjoin worker app:joins` from the beginning, until its output topics
              hold what backfill found (the joins' outputs) and stop growing (the foreign-key
              join's update stream);
  stream    - `streamjoin spark-stream app:joins --join ship --available-now` (the chained
              join: pay, both key_bys and ship in one query) against
  batch     - `streamjoin backfill app:joins --join ship`, both on local[2], to Parquet.
Prints seconds and input records/s of each, their ratios, and the machine's load average before
and after each leg (the machine may be shared: figures under load are indicative only).

    python bench/shop_backfill.py [--orders 1000000] [--skip-worker] [--skip-stream]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHOP = HERE.parent / "apps" / "shop"
sys.path[:0] = [str(HERE), str(SHOP)]

from aiokafka import AIOKafkaConsumer, TopicPartition  # noqa: E402
from produce import produce_all  # noqa: E402
from shop_data import COUNTRIES, Country, encode, generate_shop, generate_tables, key_of  # noqa: E402

STREAMJOIN = str(Path(sys.executable).with_name("streamjoin"))
LAYOUT = {"shop-orders": 6, "shop-payments": 4, "shop-shipments": 3, "shop-countries": 2}
TABLES = {"shop-order-book": 6, "shop-customers": 3}
OUTPUTS = {
    "pay": "shop-paid",
    "ship": "shop-shipped",
    "locate": "shop-located",
    "bill": "shop-order-customers",
}


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _topic_of(record: object) -> str:
    name = type(record).__name__
    if name == "Row":
        return str(record.topic)  # type: ignore[attr-defined]
    return {"Order": "shop-orders", "Payment": "shop-payments"}.get(name, "shop-shipments")


async def _produce(bootstrap: str, orders: int) -> int:
    """The demo's records for `orders` orders, in time order; how many."""
    from streamjoin.kafka.topics import TopicSpec, ensure_topics

    compacted = {"cleanup.policy": "compact"}
    await ensure_topics(
        bootstrap,
        [
            *(TopicSpec(t, n) for t, n in LAYOUT.items()),
            *(TopicSpec(t, n, compacted) for t, n in TABLES.items()),
            *(TopicSpec(t, LAYOUT["shop-orders"]) for t in OUTPUTS.values()),
        ],
    )
    events, _ = generate_shop(orders)
    rows = generate_tables(events)
    start = min(e.timestamp_ms for e in events) - 1_000
    countries = [
        ("shop-countries", code.encode(), encode(Country(code, region)), start)
        for code, region in COUNTRIES.items()
    ]
    merged = sorted([*events, *rows], key=lambda e: e.timestamp_ms)
    records = [
        *countries,
        *((_topic_of(r), key_of(r).encode(), encode(r), r.timestamp_ms) for r in merged),
    ]
    await produce_all(bootstrap, records)
    return len(records)


def _command(*arguments: str) -> tuple[float, str]:
    """(seconds, stdout) of a streamjoin command run in apps/shop; it must succeed."""
    t0 = time.monotonic()
    done = subprocess.run(
        [STREAMJOIN, *arguments], cwd=SHOP, capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"streamjoin {arguments[0]} failed:\n{done.stdout}{done.stderr}")
    return seconds, done.stdout


def _counts(stdout: str) -> dict[str, int]:
    """Join -> records, from backfill's "join 'x': N records to ..." lines."""
    return {m[1]: int(m[2]) for m in re.finditer(r"join '([^']+)': (\d+) records to", stdout)}


async def _topic_counts(bootstrap: str) -> dict[str, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t in OUTPUTS.values() for p in range(6)]
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    counts = dict.fromkeys(OUTPUTS.values(), 0)
    for tp, end in ends.items():
        counts[tp.topic] += end
    return counts


def _workers(bootstrap: str, want: dict[str, int]) -> float:
    """Seconds from a worker's start to its last output: the joins' outputs as many as
    `want`, and no output topic growing for 20 s."""
    with tempfile.TemporaryDirectory() as state:
        t0 = time.monotonic()
        worker = subprocess.Popen(
            [STREAMJOIN, "worker", "app:joins", "--bootstrap", bootstrap, "--state-dir", state],
            cwd=SHOP,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            last, counts, changed = -1, {}, time.monotonic()
            while True:
                time.sleep(2)
                counts = asyncio.run(_topic_counts(bootstrap))
                total = sum(counts.values())
                if total != last:
                    last, changed = total, time.monotonic()
                reached = all(counts[OUTPUTS[j]] >= n for j, n in want.items() if j != "bill")
                if reached and time.monotonic() - changed > 20:
                    break
                if worker.poll() is not None:
                    raise SystemExit("the worker exited")
        finally:
            worker.terminate()
            worker.wait(120)
    print(f"workers output {json.dumps(counts)}")
    return changed - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--skip-worker", action="store_true")
    parser.add_argument("--skip-stream", action="store_true")
    args = parser.parse_args()
    from streamjoin.broker import EmbeddedBroker

    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as out:
        bootstrap = broker.bootstrap
        t0 = time.monotonic()
        records = asyncio.run(_produce(bootstrap, args.orders))
        print(f"produced {records:,} records in {time.monotonic() - t0:.0f} s  ({_load()})")
        where = ["--bootstrap", bootstrap, "--master", "local[2]"]
        print(f"backfill of the app: starting ({_load()})")
        spark_s, stdout = _command("backfill", "app:joins", *where, "--output", f"{out}/all")
        counts = _counts(stdout)
        print(
            f"backfill of the app: {spark_s:.0f} s, {records / spark_s:,.0f} input records/s, "
            f"{json.dumps(counts)}  ({_load()})"
        )
        if not args.skip_worker:
            worker_s = _workers(bootstrap, counts)
            print(
                f"workers: {worker_s:.0f} s, {records / worker_s:,.0f} input records/s  "
                f"({_load()}); spark is {worker_s / spark_s:.2f}x the workers' speed"
            )
        if not args.skip_stream:
            batch_s, _ = _command(
                "backfill", "app:joins", "--join", "ship", *where, "--output", f"{out}/ship"
            )
            print(f"batch  ship: {batch_s:.0f} s  ({_load()})")
            stream_s, _ = _command(
                "spark-stream",
                "app:joins",
                "--join",
                "ship",
                *where,
                "--checkpoint",
                f"{out}/ck",
                "--output",
                f"{out}/stream",
                "--available-now",
            )
            print(
                f"stream ship: {stream_s:.0f} s  ({_load()}); stream/batch "
                f"{stream_s / batch_s:.2f}x (start-up included in both)"
            )


if __name__ == "__main__":
    main()
