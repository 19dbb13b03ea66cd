"""The worker's memory budget: its parts, sizes on the command line, stores joining and
leaving it, and the hook that tunes RocksDB."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rocksdict import BlockBasedOptions, Options

from streamjoin.dsl.app import App
from streamjoin.errors import ConfigurationError
from streamjoin.memory_settings import MIN_ROCKSDB_BYTES, parse_size
from streamjoin.state.memory import STORE_OVERHEAD_BYTES, MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.window_store import WindowStore

MIB = 1 << 20


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("256MiB", 256 * MIB),
        ("1GiB", 1 << 30),
        ("1.5 GiB", 3 << 29),
        ("512MB", 512_000_000),
        ("64m", 64 * MIB),
        ("268435456", 268435456),
        ("100kib", 102_400),
    ],
)
def test_sizes_read_binary_and_decimal_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "256 MiBs", "-5MiB", "1e9"])
def test_a_size_that_is_not_one_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"e\.g\. 256MiB"):
        parse_size(text)


def test_the_budget_splits_into_rocksdb_newest_records_and_buffers() -> None:
    memory = MemoryBudget(256 * MIB)
    assert memory.recent_bytes == 80 * MIB
    assert memory.pending.max_bytes == 16 * MIB
    assert memory.input_bytes == 16 * MIB
    assert memory.fetch_bytes == 8 * MIB
    assert memory.rocksdb_bytes == 136 * MIB
    assert memory.write_buffer_bytes == 136 * MIB // 3
    assert "memory budget 256 MiB" in memory.describe()
    with pytest.raises(ConfigurationError, match="leaves RocksDB less than 8 MiB"):
        MemoryBudget(64 * MIB, recent_bytes=60 * MIB)


def test_stores_opened_later_join_the_budget_and_closing_gives_their_share_back(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    memory = MemoryBudget(2 * MIN_ROCKSDB_BYTES, recent_bytes=4 * MIB)
    first = WindowStore(StoreSpec.window("w1", retention_ms=1_000), tmp_path / "1", memory)
    second = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "2", memory)
    assert memory.recent.max_bytes == 4 * MIB - 2 * STORE_OVERHEAD_BYTES
    first.attach_writer(recording_writer())
    for ts in range(100):
        first.put(b"k", ts, b"v" * 100)
    assert memory.usage().recent_records == first.recent_bytes > 0
    third = WindowStore(StoreSpec.window("w3", retention_ms=1_000), tmp_path / "3", memory)
    assert memory.recent.max_bytes == 4 * MIB - 3 * STORE_OVERHEAD_BYTES
    first.close()
    first.close()  # twice: given back once
    assert memory.usage().recent_records == 0
    assert memory.recent.max_bytes == 4 * MIB - 2 * STORE_OVERHEAD_BYTES
    second.close()
    third.close()
    assert (memory.open_stores, memory.recent.max_bytes) == (0, 4 * MIB)


def test_write_buffers_of_all_stores_count_against_the_shared_limit(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    memory = MemoryBudget(64 * MIB, recent_bytes=0)  # no memtable fills up
    stores = [KeyValueStore(StoreSpec.kv(f"kv{i}"), tmp_path / f"{i}", memory) for i in range(4)]
    for store in stores:
        store.attach_writer(recording_writer())
        for i in range(2_000):
            store.put(b"k%d" % i, b"v" * 200)
        store.begin_flush()
        store.finish_flush()
    in_stores = sum(store.write_buffer_bytes() for store in stores)
    assert memory.usage().write_buffers >= in_stores > 4 * 2_000 * 200
    for store in stores:
        store.close()


def test_writes_past_the_write_buffers_limit_flush_the_largest_memtables_at_once(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    """Back-pressure: after every write the memtables of all stores are within their limit,
    whether RocksDB's own background flushes kept up or not; a restore too."""
    memory = MemoryBudget(MIN_ROCKSDB_BYTES * 3 // 2, recent_bytes=0)  # 3.75 MiB write buffers
    stores = [KeyValueStore(StoreSpec.kv(f"kv{i}"), tmp_path / f"{i}", memory) for i in range(8)]
    for store in stores:
        store.attach_writer(recording_writer())
    for commit in range(6):
        for store in stores:
            for i in range(1_000):
                store.put(b"k%d-%d" % (commit, i), b"v" * 300)
            store.begin_flush()
            store.finish_flush()
            assert memory.write_buffers.get_usage() <= memory.write_buffer_bytes
    records = [
        SimpleNamespace(key=b"r%d" % i, value=b"v" * 300, timestamp=0, timestamp_type=0)
        for i in range(1_000)
    ]
    for _ in range(6):
        for store in stores:
            store.restore(records, logged=False)
            assert memory.write_buffers.get_usage() <= memory.write_buffer_bytes
    assert memory.forced_flushes > 0
    for store in stores:
        store.close()
    assert memory.relieve_write_buffers() == 0  # closed stores are out of the budget


def test_the_options_hook_sees_every_store_before_it_opens(tmp_path: Path) -> None:
    seen: list[str] = []

    def tune(name: str, options: Options, table: BlockBasedOptions) -> None:
        seen.append(name)
        options.set_write_buffer_size(1 << 20)
        table.set_block_size(16 * 1024)

    memory = MemoryBudget(rocksdb_options=tune)
    KeyValueStore(StoreSpec.kv("pending"), tmp_path / "p", memory).close()
    assert seen == ["pending"]


def test_the_app_checks_its_memory_settings() -> None:
    assert App("a", memory_budget_bytes=64 * MIB).settings.memory_budget_bytes == 64 * MIB
    with pytest.raises(ConfigurationError, match="leaves RocksDB"):
        App("a", memory_budget_bytes=16 * MIB, window_memory_bytes=12 * MIB)
    with pytest.raises(ConfigurationError, match="rocksdb_options must be a callable"):
        App("a", rocksdb_options="fast")
