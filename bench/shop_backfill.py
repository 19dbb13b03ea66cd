"""The shop demo's four joins over history (apps/shop: two key_bys, a chained join, a global
table, a foreign-key join): Spark against the workers on the same topics, and spark-stream
against Spark batch, in one run on the embedded broker.

Produces the shop demo's records for N orders (orders, payments, shipments; the order book and
the customers; the countries), then times, each as a user runs it from apps/shop (a process of
its own, Spark's start-up included, as a command pays it):
  backfill  - `streamjoin backfill app:joins` on local[2]: the four joins in one job, from the
              topics to Parquet;
  workers   - one `streamjoin worker app:joins` from the beginning, until its output topics
              stop growing (for 20 s once they hold what backfill found, else for 90 s: a
              worker reading a backlog may join fewer, see docs/spark.md on the order Spark
              assumes), with the difference from backfill's counts;
  stream    - `streamjoin spark-stream app:joins --join J --available-now` (J = --stream-join,
              `locate` by default: `pay`, its payments through filter and key_by, the chained
              windowed `ship` and the global-table `locate` in one query; at most
              --max-records-per-batch records per topic and micro-batch) against
  batch     - `streamjoin backfill app:joins --join J`, both on local[2], to Parquet.
Prints seconds and input records/s of each, their ratios, and the machine's load average before
and after each leg (the machine may be shared: figures under load are indicative only).

    python bench/shop_backfill.py [--orders 1000000] [--skip-worker] [--skip-stream]
        [--stream-join locate] [--max-records-per-batch N] [--only-stream]
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

import pyarrow.parquet as pq  # noqa: E402
from aiokafka import TopicPartition  # noqa: E402
from produce import produce_all  # noqa: E402
from shop_data import (  # noqa: E402
    COUNTRIES,
    ORDER_EVERY_MS,
    Country,
    encode,
    generate_shop,
    generate_tables,
    key_of,
)

from streamjoin.kafka.watermarks import log_bounds  # noqa: E402

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
    # History: the last order 10 minutes ago, its payment and shipment before now (at 20 ms an
    # order, 1M orders from now on would reach 5.5 hours ahead, which workers dead-letter).
    span_ms = orders * ORDER_EVERY_MS + 10 * 60_000
    events, _ = generate_shop(orders, start_ms=int(time.time() * 1000) - span_ms)
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
    """Records in each output topic, to the fetched high watermarks: the embedded broker's
    ListOffsets answers too low after batched produces, and the wait never ended on them."""
    tps = [TopicPartition(t, p) for t in OUTPUTS.values() for p in range(6)]
    counts = dict.fromkeys(OUTPUTS.values(), 0)
    for bounds in await log_bounds(bootstrap, tps):
        counts[bounds.topic] += bounds.end - bounds.start
    return counts


_SETTLED_S = 20
_STALLED_S = 90


def _workers(bootstrap: str, want: dict[str, int]) -> float:
    """Seconds from a worker's start to its last output: no output topic growing for 20 s once
    the joins' outputs are as many as `want`, else for 90 s."""
    with tempfile.TemporaryDirectory() as state, (Path(state) / "worker.log").open("w+") as log:
        t0 = time.monotonic()
        worker = subprocess.Popen(
            [STREAMJOIN, "worker", "app:joins", "--bootstrap", bootstrap, "--state-dir", state],
            cwd=SHOP,
            stdout=log,
            stderr=subprocess.STDOUT,
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
                still = time.monotonic() - changed
                if still > _STALLED_S or (reached and still > _SETTLED_S):
                    break
                if worker.poll() is not None:
                    raise SystemExit("the worker exited")
        finally:
            worker.terminate()
            worker.wait(120)
        log.seek(0)
        _said(log.read())
    print(f"workers output {json.dumps(counts)}")
    short = {j: n - counts[OUTPUTS[j]] for j, n in want.items() if counts[OUTPUTS[j]] != n}
    if short:
        print(f"workers' counts differ from backfill's by {json.dumps(short)} (backfill - workers)")
    return changed - t0


def _said(log: str) -> None:
    """The worker's own account: its per-join summary (late and dead-lettered records
    included), and its warnings, each kind once with how often."""
    lines = log.splitlines()
    for line in lines:
        if re.search(r"INFO .*: join \w+: \d+ matched", line):
            print(f"  worker: {line.split(': ', 1)[1]}")
    warnings: dict[str, int] = {}
    for line in lines:
        if " WARNING " in line:
            kind = re.sub(r"\d+", "N", line.split(" WARNING ", 1)[1])[:160]
            warnings[kind] = warnings.get(kind, 0) + 1
    for kind, times in sorted(warnings.items(), key=lambda item: -item[1]):
        print(f"  worker warned {times}x: {kind}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--skip-worker", action="store_true")
    parser.add_argument(
        "--only-stream", action="store_true", help="the stream and batch legs alone"
    )
    parser.add_argument("--skip-stream", action="store_true")
    parser.add_argument("--stream-join", default="locate", choices=("pay", "ship", "locate"))
    parser.add_argument("--max-records-per-batch", type=int, default=None)
    args = parser.parse_args()
    from streamjoin.broker import EmbeddedBroker

    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as out:
        bootstrap = broker.bootstrap
        t0 = time.monotonic()
        records = asyncio.run(_produce(bootstrap, args.orders))
        print(f"produced {records:,} records in {time.monotonic() - t0:.0f} s  ({_load()})")
        where = ["--bootstrap", bootstrap, "--master", "local[2]"]
        if args.only_stream:
            _stream_leg(args.stream_join, where, out, args.max_records_per_batch)
            return
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
            _stream_leg(args.stream_join, where, out, args.max_records_per_batch)


def _stream_leg(join: str, where: list[str], out: str, max_records: int | None) -> None:
    """spark-stream of `join` (and the joins it reads) against backfill of the same."""
    batch_s, stdout = _command(
        "backfill", "app:joins", "--join", join, *where, "--output", f"{out}/batch-{join}"
    )
    print(f"batch  {join}: {batch_s:.0f} s, {_counts(stdout)[join]:,} records  ({_load()})")
    bounded = [] if max_records is None else ["--max-records-per-batch", str(max_records)]
    stream_s, stdout = _command(
        "spark-stream",
        "app:joins",
        "--join",
        join,
        *where,
        *bounded,
        "--checkpoint",
        f"{out}/ck-{join}",
        "--output",
        f"{out}/stream-{join}",
        "--available-now",
    )
    batches = len(re.findall(r"^batch \d+:", stdout, re.MULTILINE))
    written = pq.read_table(f"{out}/stream-{join}", columns=["key"]).num_rows
    print(
        f"stream {join}: {stream_s:.0f} s, {written:,} records, {batches} micro-batches  "
        f"({_load()}); stream/batch {stream_s / batch_s:.2f}x (start-up included in both)"
    )


if __name__ == "__main__":
    main()
