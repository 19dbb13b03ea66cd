"""Restore throughput of streamjoin's state stores against a raw aiokafka read, in the same run.

Fills a key-value and a window changelog on the embedded broker, then alternates:
  raw     - an aiokafka consumer (same settings as the restore consumer) reads the changelog
            from offset 0 until the fetched high watermark, touching every record;
  restore - StateManager restores a fresh task from that changelog into RocksDB.
Prints records/s and the ratio (target: restore >= 80% of raw) as the median of the rounds and
for the best round (the one least disturbed by other processes on a shared machine), and the
client's CPU time per record. Then measures rocksdict's write rate with one put per record
against WriteBatch.

    python bench/restore.py [--records 200000] [--rounds 7]
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
from typing import NamedTuple

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rocksdict import Options, Rdict, WriteBatch

from streamjoin.broker import EmbeddedBroker
from streamjoin.state import (
    ReaderConfig,
    RestoreCompleted,
    RestoreStarted,
    StateEvent,
    StateManager,
    StoreKind,
    StoreSpec,
    TaskSpec,
    changelog_topic,
    ensure_changelogs,
)
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.stores.encoding import window_changelog_key

APP = "bench"
KEYS = 50_000
VALUE = b"v" * 100


async def fill(
    producer: AIOKafkaProducer,
    spec: StoreSpec,
    records: int,
    *,
    app: str = APP,
    first_ms: int = 1_000_000,
    span_ms: int | None = None,
) -> None:
    """Write `records` changelog records as an active store would (batched sends). A window
    store's event times start at `first_ms`, 1 ms apart or spread evenly over `span_ms`."""
    writer = ChangelogWriter(producer, changelog_topic(app, spec.name), 0)
    for i in range(records):
        key = b"key-%08d" % (i % KEYS)
        if spec.kind is StoreKind.WINDOW:
            offset = i if span_ms is None else i * span_ms // records
            key = window_changelog_key(key, first_ms + offset, i)
        writer.append(key, VALUE)  # stamped when logged, as the stores do
        if i % 100_000 == 99_999:  # bounded memory for fills of gigabytes
            await writer.wait_confirmed(writer.seal())
    await writer.wait_confirmed(writer.seal())


class Timing(NamedTuple):
    records: int
    seconds: float
    cpu_seconds: float
    """CPU time of this process's thread: immune to other processes competing for the cores."""
    compaction_seconds: float = 0.0
    """A restore's wait, after reading, for RocksDB to compact the level-0 files it wrote
    (state/stores/bulk_load.py) before the task runs."""


async def raw_read(bootstrap: str, topic: str, config: ReaderConfig) -> Timing:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="none",
        fetch_max_wait_ms=config.fetch_max_wait_ms,
        max_partition_fetch_bytes=config.max_partition_fetch_bytes,
    )
    await consumer.start()
    tp = TopicPartition(topic, 0)
    try:
        started, cpu_started = time.perf_counter(), time.thread_time()
        consumer.assign([tp])
        consumer.seek(tp, 0)
        count = touched = 0
        while True:
            batches = await consumer.getmany(timeout_ms=config.poll_timeout_ms)
            for records in batches.values():
                count += len(records)
                for record in records:  # as a restore must: look at every key and value
                    touched += len(record.key) + len(record.value)
            highwater = consumer.highwater(tp)
            if highwater is not None and await consumer.position(tp) >= highwater:
                return Timing(
                    count, time.perf_counter() - started, time.thread_time() - cpu_started
                )
    finally:
        await consumer.stop()


async def restore(
    bootstrap: str, producer: AIOKafkaProducer, spec: StoreSpec, state_dir: Path
) -> Timing:
    shutil.rmtree(state_dir, ignore_errors=True)
    manager = StateManager(state_dir=state_dir, app_id=APP, bootstrap=bootstrap, producer=producer)
    cpu: dict[str, float] = {}
    done: list[RestoreCompleted] = []

    def on_event(event: StateEvent) -> None:  # runs in the reader loop, synchronously
        if isinstance(event, RestoreStarted):
            cpu["started"] = time.thread_time()
        elif isinstance(event, RestoreCompleted):
            cpu["completed"] = time.thread_time()
            done.append(event)

    manager.subscribe(on_event)
    await manager.start()
    try:
        opened = time.perf_counter()
        task = await manager.open_active(TaskSpec("0_0", 0, 1, (spec,)))
        await task.wait_ready()
        ready = time.perf_counter() - opened
    finally:
        await manager.close()
    read = done[0]
    return Timing(
        read.restored, read.seconds, cpu["completed"] - cpu["started"], ready - read.seconds
    )


def rocksdict_rates(path: Path, records: int) -> tuple[float, float]:
    keys = [b"key-%08d" % i for i in range(records)]
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    rates = []
    for batched in (False, True):
        shutil.rmtree(path, ignore_errors=True)
        db = Rdict(str(path), options)
        started = time.perf_counter()
        if batched:
            for low in range(0, records, 1000):
                batch = WriteBatch(raw_mode=True)
                for key in keys[low : low + 1000]:
                    batch.put(key, VALUE)
                db.write(batch)
        else:
            for key in keys:
                db.put(key, VALUE)
        rates.append(records / (time.perf_counter() - started))
        db.close()
    return rates[0], rates[1]


async def run(bootstrap: str, records: int, rounds: int, workdir: Path) -> None:
    stores = [StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**12)]
    await ensure_changelogs(bootstrap, APP, dict.fromkeys(stores, 1))
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    config = ReaderConfig()
    try:
        for spec in stores:
            started = time.perf_counter()
            await fill(producer, spec, records)
            seconds = time.perf_counter() - started
            print(f"filled {spec.name} changelog: {records:,} records in {seconds:.1f}s")
        print(
            f"\n{'':<7}{'median of rounds (rec/s)':^33}{'best round (rec/s)':^33}"
            f"{'CPU us/record':^20}\n{'store':<7}{'raw':>11}{'restore':>11}{'ratio':>11}"
            f"{'raw':>11}{'restore':>11}{'ratio':>11}{'raw':>10}{'restore':>10}"
        )
        for spec in stores:
            raw_runs, restore_runs = [], []
            for _ in range(rounds):  # interleaved, so that load from elsewhere hits both alike
                raw_runs.append(await raw_read(bootstrap, changelog_topic(APP, spec.name), config))
                restore_runs.append(await restore(bootstrap, producer, spec, workdir / "state"))
            assert all(run.records == records for run in raw_runs + restore_runs)
            raw_rates = [records / run.seconds for run in raw_runs]
            restore_rates = [records / run.seconds for run in restore_runs]
            raw, restored = statistics.median(raw_rates), statistics.median(restore_rates)
            best_raw, best_restored = max(raw_rates), max(restore_rates)
            raw_cpu = statistics.median(run.cpu_seconds for run in raw_runs) / records * 1e6
            restore_cpu = statistics.median(run.cpu_seconds for run in restore_runs) / records * 1e6
            print(
                f"{spec.name:<7}{raw:>11,.0f}{restored:>11,.0f}{restored / raw:>11.0%}"
                f"{best_raw:>11,.0f}{best_restored:>11,.0f}{best_restored / best_raw:>11.0%}"
                f"{raw_cpu:>10.2f}{restore_cpu:>10.2f}"
            )
    finally:
        await producer.stop()
    single, batched = rocksdict_rates(workdir / "rocks", records)
    print(
        f"\nrocksdict writes ({records:,} x {len(VALUE)} B): one put each {single:,.0f}/s, "
        f"WriteBatch(1000) {batched:,.0f}/s ({batched / single:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-bench-") as workdir,
        EmbeddedBroker() as broker,
    ):
        print(f"embedded broker {broker.bootstrap}, cpus={os.cpu_count()}")
        asyncio.run(run(broker.bootstrap, args.records, args.rounds, Path(workdir)))


if __name__ == "__main__":
    main()
