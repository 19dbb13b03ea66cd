"""Global tables on a real broker: restored before the worker processes anything, kept up to
date while it runs, resumed from their checkpoint, and held whole by every worker."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import harness
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from worker_processes import EVENT_T0

from streamjoin import App
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.memory_settings import MIB
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.stores.global_store import unpack_global

pytestmark = [pytest.mark.broker]

Running, until, workers = harness.Running, harness.until, harness.workers

COUNTRY_PARTITIONS = 3
VISIT_PARTITIONS = 2
KEYS = 150
VERSIONS = 60
"""Each country is written VERSIONS times, about 1 KB each (9 MB in all: several fetches per
partition); only the last version, at the end of its partition, is the table's value."""


def make_app(suffix: str) -> App:
    app = App(f"geo-{suffix}")
    visits = app.topic(f"visits-{suffix}")
    countries = app.global_table(f"countries-{suffix}")

    @app.join(visits, countries, key=lambda v: v["country"], how="inner", into=f"geo-{suffix}")
    def locate(visit: dict[str, Any], country: dict[str, Any]) -> dict[str, Any]:
        return {"visit": visit["id"], "version": country["version"]}

    return app


async def produce(bootstrap: str, topic: str, records: list[tuple[str, Any]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        for n, (key, value) in enumerate(records):
            payload = None if value is None else json.dumps(value).encode()
            await producer.send(topic, payload, key=key.encode(), timestamp_ms=EVENT_T0 + n)
        await producer.flush()
    finally:
        await producer.stop()


async def outputs(bootstrap: str, topic: str, want: int) -> dict[int, int]:
    """visit id -> the country version it joined, once `want` outputs are there (or 20 s)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    seen: dict[int, int] = {}
    try:
        tps = [TopicPartition(topic, p) for p in range(VISIT_PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)

        async def read() -> bool:
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for r in records:
                    value = json.loads(r.value)
                    seen[value["visit"]] = value["version"]
            return len(seen) >= want

        for _ in range(100):
            if await read():
                break
        return seen
    finally:
        await consumer.stop()


def countries(versions: range) -> list[tuple[str, Any]]:
    pad = "x" * 1000
    return [(f"C{k}", {"version": v, "pad": pad}) for v in versions for k in range(KEYS)]


def visits(ids: range) -> list[tuple[str, Any]]:
    return [(f"u{i}", {"id": i, "country": f"C{i % KEYS}"}) for i in ids]


def table_of(tables: GlobalTables | None, topic: str) -> dict[bytes, int]:
    assert tables is not None
    store = tables.table(topic)
    return {key: json.loads(unpack_global(raw)[2])["version"] for key, raw in store.range()}


async def test_restored_before_processing_then_updated_resumed_and_held_by_every_worker(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    app = make_app(unique)
    topic, stream, out = f"countries-{unique}", f"visits-{unique}", f"geo-{unique}"
    await ensure_topics(
        bs,
        [
            TopicSpec(topic, COUNTRY_PARTITIONS),
            TopicSpec(stream, VISIT_PARTITIONS),
            TopicSpec(out, VISIT_PARTITIONS),
        ],
    )
    # Everything is on the broker before the worker starts: the very first visits must join
    # the last version of their country, which only a complete restore has.
    await produce(bs, topic, countries(range(VERSIONS)))
    await produce(bs, stream, visits(range(KEYS)))
    first = Running(app, bs, tmp_path / "w1")
    async with workers(first):
        await first.start()
        tables = first.worker.global_tables
        assert tables.restored_records == KEYS * VERSIONS
        joined = await outputs(bs, out, KEYS)
        assert joined == dict.fromkeys(range(KEYS), VERSIONS - 1)

        # Updates while running: a visit produced after an update has been applied sees it.
        await produce(bs, topic, [("C0", {"version": 1000}), ("C1", None)])
        await until(
            lambda: (
                table_of(tables, topic).get(b"C0") == 1000 and b"C1" not in table_of(tables, topic)
            ),
            20,
            "the update and the tombstone applied",
        )
        await produce(
            bs,
            stream,
            [("u9000", {"id": 9000, "country": "C0"}), ("u9001", {"id": 9001, "country": "C1"})],
        )
        joined = await outputs(bs, out, KEYS + 1)
        assert joined[9000] == 1000 and 9001 not in joined  # inner: no country C1 any more
        assert first.worker.manager is not None
        assert first.worker.manager.counters()["locate"][0].no_match_dropped >= 1

    # A restart resumes from the checkpoint: it reads only what was written meanwhile.
    await produce(bs, topic, [("C2", {"version": 2000}), ("C3", {"version": 2000})])
    again = Running(app, bs, tmp_path / "w1")
    second = Running(app, bs, tmp_path / "w2")
    async with workers(again, second):
        await again.start()
        assert again.worker.global_tables.restored_records == 2
        await second.start()  # a fresh state directory: the whole topic
        assert second.worker.global_tables.restored_records == KEYS * VERSIONS + 4
        expected = {f"C{k}".encode(): VERSIONS - 1 for k in range(KEYS)}
        expected.update({b"C0": 1000, b"C2": 2000, b"C3": 2000})
        del expected[b"C1"]
        assert table_of(again.worker.global_tables, topic) == expected
        assert table_of(second.worker.global_tables, topic) == expected


async def test_a_copy_reports_its_lag_behind_the_topic_until_it_applies_the_updates(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """What a query answered from a global table says of its copy: records fetched from the
    topic but not applied yet, and the time since the copy was last at the topic's end."""
    topic = f"countries-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    await produce(broker.bootstrap, topic, countries(range(2)))
    tables = GlobalTables(
        {topic: 1}, StateDirectory(tmp_path, "lag"), MemoryBudget(), broker.bootstrap
    )
    await tables.start()
    try:
        before = time.monotonic()
        assert tables.read_lag(topic, 0) == (0, 0)
        at_end = (before, time.monotonic())  # the last read finding the copy at the end
        await produce(broker.bootstrap, topic, [("C0", {"version": 7}), ("C1", {"version": 7})])
        for _ in range(200):
            before = time.monotonic()
            lag = tables.read_lag(topic, 0)
            if lag not in (None, (0, 0)):
                break
            at_end = (before, time.monotonic())
            await asyncio.sleep(0.05)
        after = time.monotonic()
        assert lag is not None and lag[0] == 2  # fetched (the high watermark moved), not applied
        assert int((before - at_end[1]) * 1000) - 1 <= lag[1] <= int((after - at_end[0]) * 1000)
        for _ in range(200):
            await tables.poll()
            if tables.read_lag(topic, 0) == (0, 0):
                break
            await asyncio.sleep(0.1)
        assert tables.read_lag(topic, 0) == (0, 0)
        assert table_of(tables, topic)[b"C0"] == 7
    finally:
        await tables.close()


async def test_a_restore_s_pile_of_level0_files_is_compacted_before_the_tables_are_read(
    broker: Broker, unique: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The global tables restore with RocksDB's compactions held, which piles up level-0 files
    that each span every key: a lookup through the pile reads every one of them, on the event
    loop. The worker's processing waits for their compaction, and says so."""
    caplog.set_level(logging.INFO, logger="streamjoin.state")
    topic = f"countries-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    records = 80_000  # of 1 kB: with 1 MiB memtables, about 20 level-0 files
    await produce(broker.bootstrap, topic, [(f"C{k}", {"pad": "x" * 1000}) for k in range(records)])
    tables = GlobalTables(
        {topic: 1}, StateDirectory(tmp_path, "pile"), MemoryBudget(64 * MIB), broker.bootstrap
    )
    await tables.start()
    try:
        store = tables.table(topic)
        level0 = store._db.property_int_value("rocksdb.num-files-at-level0")
        assert level0 < 10, f"read through a pile of {level0} level-0 files"
        assert sum(1 for _ in store.range()) == records
        assert "waiting for RocksDB to compact" in caplog.text
    finally:
        await tables.close()
