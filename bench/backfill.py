"""Backfill on Spark against the streaming worker, on the same data in the same run.

Produces N impressions and N clicks (one click per auction drawn at random, 0-70 s after its
impression, so some fall outside the 60 s window) in time order to the embedded broker, then:
  spark   - `backfill` of the join from Kafka to Parquet on local[2], with the Python joiner
            (the worker's code, run per row) and with the same joiner as a field mapping;
  worker  - `streamjoin worker` consuming the same topics from the beginning until it has
            written as many joined records as Spark found.
Prints input records/s (2N / time), the output count of each, and the peak RSS of each
engine's process tree (Spark: this process, its JVM and Python workers).

    python bench/backfill.py [--records 1000000] [--partitions 4] [--skip-worker]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from produce import produce_all

HERE = Path(__file__).resolve().parent
CAMPAIGNS = ("spring-sale", "new-phone", "travel", "insurance", "games")
START = 1_700_000_000_000


def _tree_rss(root: int) -> int:
    """Resident bytes of `root` and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


@contextmanager
def peak_rss(root: int) -> Iterator[list[int]]:
    """Samples the RSS of `root`'s process tree every 0.25 s; yields [peak bytes]."""
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.25):
            peak[0] = max(peak[0], _tree_rss(root))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


async def produce(bootstrap: str, impressions: str, clicks: str, records: int) -> None:
    rng = random.Random(7)
    events: list[tuple[int, str, bytes, bytes]] = []
    for i in range(records):
        ts = START + i * 10
        key = f"a{i}".encode()
        campaign = CAMPAIGNS[i % len(CAMPAIGNS)]
        events.append(
            (
                ts,
                impressions,
                key,
                json.dumps({"auction": i, "campaign": campaign, "ts": ts}).encode(),
            )
        )
    for _ in range(records):
        auction = rng.randrange(records)
        ts = START + auction * 10 + rng.randrange(70_000)
        events.append(
            (
                ts,
                clicks,
                f"a{auction}".encode(),
                json.dumps({"auction": auction, "ts": ts}).encode(),
            )
        )
    events.sort(key=lambda e: e[0])
    await produce_all(bootstrap, ((topic, key, value, ts) for ts, topic, key, value in events))


async def count_output(
    bootstrap: str, topic: str, partitions: int, want: int, stall_s: float
) -> tuple[int, float | None, float]:
    """Records in `topic` once `want` have arrived or none came for `stall_s`; when the first
    and the last came."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    seen, first, last = 0, None, time.monotonic()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while seen < want and time.monotonic() - last < stall_s:
            for records in (await consumer.getmany(timeout_ms=200, max_records=50_000)).values():
                if records:
                    last = time.monotonic()
                    first = first or last
                seen += len(records)
    finally:
        await consumer.stop()
    return seen, first, last


def spark_leg(bootstrap: str, records: int) -> tuple[int, float, int]:
    """(joined records, seconds, peak RSS) of the Python-joiner backfill."""
    from backfill_app import app, fields_app

    from streamjoin.spark.backfill import backfill
    from streamjoin.spark.inputs import Sources
    from streamjoin.spark.session import spark_session

    result = (0, 0.0)
    started = time.monotonic()
    with peak_rss(os.getpid()) as peak, spark_session("local[2]") as spark:
        spark.range(1).count()
        print(f"spark   session up in {time.monotonic() - started:.1f} s")
        for owner, spec in (
            (app, app.get_join("attribute")),
            (fields_app, fields_app.get_join("attribute_fields")),
        ):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.monotonic()
                job = backfill(spark, owner, [spec], Sources(bootstrap))
                job.records(spec).write.parquet(f"{out}/result")
                elapsed = time.monotonic() - t0
                count = spark.read.parquet(f"{out}/result").count()
            label = "python joiner" if spec.name == "attribute" else "field mapping"
            print(
                f"spark   {label:<14} {count:>9} joined in {elapsed:6.1f} s  "
                f"{2 * records / elapsed:>9,.0f} input records/s"
            )
            if spec.name == "attribute":
                result = (count, elapsed)
    print(f"spark   peak RSS {peak[0] / 2**20:,.0f} MiB (driver, JVM and Python workers)")
    return (*result, peak[0])


def worker_leg(
    bootstrap: str, suffix: str, partitions: int, records: int, want: int
) -> tuple[int, float, int]:
    """(joined records, seconds, peak RSS) of the worker, from its start to its last output
    (start-up and the group join included, as in Spark's figures the job's planning is)."""
    from backfill_app import app

    spec = app.get_join("attribute")
    with tempfile.TemporaryDirectory() as state:
        t0 = time.monotonic()
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamjoin",
                "worker",
                "backfill_app:app",
                "--app-dir",
                str(HERE),
                "--bootstrap",
                bootstrap,
                "--state-dir",
                state,
                "--session-timeout",
                "6",
            ],
            env={**os.environ, "BENCH_SUFFIX": suffix},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with peak_rss(worker.pid) as peak:
                seen, first, done = asyncio.run(
                    count_output(bootstrap, spec.into.name, partitions, want, 60)
                )
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                print("worker  did not stop within 60 s of SIGTERM; killed")
                worker.kill()
                worker.wait()
    elapsed = done - t0
    if seen < want:
        print(f"worker  STALLED: {seen} of {want} joined records, none for 60 s")
    print(
        f"worker  python joiner  {seen:>9} joined in {elapsed:6.1f} s  "
        f"{2 * records / elapsed:>9,.0f} input records/s  (first output after "
        f"{(first or done) - t0:.1f} s: group join and state set-up)"
    )
    print(f"worker  peak RSS {peak[0] / 2**20:,.0f} MiB")
    return seen, elapsed, peak[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="impressions, and clicks")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--skip-worker", action="store_true")
    args = parser.parse_args()
    suffix = uuid.uuid4().hex[:8]
    os.environ["BENCH_SUFFIX"] = suffix
    sys.path.insert(0, str(HERE))
    from backfill_app import app

    from streamjoin.broker import EmbeddedBroker
    from streamjoin.kafka.topics import TopicSpec, ensure_topics

    spec = app.get_join("attribute")
    with EmbeddedBroker() as broker:
        topics = [*spec.input_topics, spec.into.name]
        asyncio.run(
            ensure_topics(broker.bootstrap, [TopicSpec(t, args.partitions) for t in topics])
        )
        t0 = time.monotonic()
        asyncio.run(produce(broker.bootstrap, *spec.input_topics, args.records))
        took = time.monotonic() - t0
        rate = 2 * args.records / took
        print(f"produced {2 * args.records:,} records in {took:.1f} s ({rate:,.0f}/s)")
        spark_count, spark_s, spark_rss = spark_leg(broker.bootstrap, args.records)
        if not args.skip_worker:
            worker_count, worker_s, worker_rss = worker_leg(
                broker.bootstrap, suffix, args.partitions, args.records, spark_count
            )
            print(
                f"ratio   spark/worker throughput {worker_s / spark_s:.2f}x; same output count: "
                f"{spark_count == worker_count}; peak RSS spark/worker "
                f"{spark_rss / max(1, worker_rss):.1f}x"
            )


if __name__ == "__main__":
    main()
