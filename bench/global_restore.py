"""Global table restore rate against a raw aiokafka read of the same topic, in the same run.

Fills a topic of several partitions on the embedded broker (keys repeat: it is a table), then
alternates:
  raw     - an aiokafka consumer (same fetch settings) reads every partition from offset 0 to
            the fetched high watermarks, touching every key and value;
  restore - GlobalTables restores a fresh store from that topic (what a worker does before it
            processes anything: all partitions into one RocksDB, then a checkpoint).
Prints records/s of each as the median of the rounds and for the best round (the one least
disturbed by other processes on a shared machine), and the ratio restore/raw.

    python bench/global_restore.py [--records 200000] [--partitions 4] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.broker import EmbeddedBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget

TOPIC = "bench-countries"
KEYS = 50_000
VALUE = b'{"name":"somewhere","region":"' + b"r" * 70 + b'"}'


async def fill(bootstrap: str, records: int, partitions: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    try:
        for i in range(records):
            key = b"key-%08d" % (i % KEYS)
            await producer.send(TOPIC, VALUE, key=key, partition=i % partitions)
        await producer.flush()
    finally:
        await producer.stop()


async def raw_read(bootstrap: str, partitions: int) -> tuple[int, float]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="none",
        fetch_max_wait_ms=100,
        max_partition_fetch_bytes=4 * 1024 * 1024,
    )
    await consumer.start()
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    try:
        started = time.perf_counter()
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        count = touched = 0
        while True:
            batches = await consumer.getmany(timeout_ms=100, max_records=10_000)
            for records in batches.values():
                count += len(records)
                for record in records:  # as a restore must: look at every key and value
                    touched += len(record.key) + len(record.value)
            ends = [consumer.highwater(tp) for tp in tps]
            positions = [await consumer.position(tp) for tp in tps]
            if None not in ends and all(p >= e for p, e in zip(positions, ends, strict=True)):
                return count, time.perf_counter() - started
    finally:
        await consumer.stop()


async def restore(bootstrap: str, partitions: int, state_dir: Path) -> tuple[int, float]:
    shutil.rmtree(state_dir, ignore_errors=True)
    tables = GlobalTables(
        {TOPIC: partitions}, StateDirectory(state_dir, "bench"), MemoryBudget(), bootstrap
    )
    try:
        started = time.perf_counter()
        await tables.start()
        return tables.restored_records, time.perf_counter() - started
    finally:
        await tables.close()


async def run(bootstrap: str, records: int, partitions: int, rounds: int, workdir: Path) -> None:
    await ensure_topics(bootstrap, [TopicSpec(TOPIC, partitions)])
    started = time.perf_counter()
    await fill(bootstrap, records, partitions)
    seconds = time.perf_counter() - started
    print(f"filled {TOPIC}: {records:,} records, {partitions} partitions in {seconds:.1f}s")
    raw_rates, restore_rates = [], []
    for _ in range(rounds):  # interleaved, so that load from elsewhere hits both alike
        count, seconds = await raw_read(bootstrap, partitions)
        assert count == records, count
        raw_rates.append(count / seconds)
        count, seconds = await restore(bootstrap, partitions, workdir / "state")
        assert count == records, count
        restore_rates.append(count / seconds)
    raw, restored = statistics.median(raw_rates), statistics.median(restore_rates)
    best_raw, best_restored = max(raw_rates), max(restore_rates)
    print(
        f"median of {rounds} rounds: raw consume {raw:,.0f} rec/s, global restore "
        f"{restored:,.0f} rec/s, ratio {restored / raw:.0%}"
    )
    print(
        f"best round:          raw consume {best_raw:,.0f} rec/s, global restore "
        f"{best_restored:,.0f} rec/s, ratio {best_restored / best_raw:.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-bench-") as workdir,
        EmbeddedBroker() as broker,
    ):
        print(f"embedded broker {broker.bootstrap}, cpus={os.cpu_count()}")
        asyncio.run(
            run(broker.bootstrap, args.records, args.partitions, args.rounds, Path(workdir))
        )


if __name__ == "__main__":
    main()
