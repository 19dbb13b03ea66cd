"""A restore writes its changelog into RocksDB without compacting meanwhile, compacts once when
it ends, and a running task's writes are never stalled by the level-0 files that piled up."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.bulk_load import BulkLoad
from streamjoin.state.stores.kv_store import KeyValueStore

MEMORY = MemoryBudget(total_bytes=64 * 1024 * 1024)
"""Small memtables (1 MiB): a few MB of restore make many level-0 files."""
BATCHES = 30
"""Restore batches, each about one memtable."""


def level0_files(store: KeyValueStore) -> int:
    return store._db.property_int_value("rocksdb.num-files-at-level0") or 0


def write_delayed_or_stopped(store: KeyValueStore) -> bool:
    db = store._db
    delayed = db.property_int_value("rocksdb.actual-delayed-write-rate") or 0
    return bool(delayed or db.property_int_value("rocksdb.is-write-stopped"))


def wait_for(condition: Callable[[], bool], what: str, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"not within {within:.0f}s: {what}"
        time.sleep(0.05)


def background_idle(store: KeyValueStore) -> bool:
    db = store._db
    return not any(
        db.property_int_value(name)
        for name in (
            "rocksdb.num-running-compactions",
            "rocksdb.num-running-flushes",
            "rocksdb.mem-table-flush-pending",
        )
    )


def restore_many_memtables(
    store: KeyValueStore, make_record: Callable[[int, bytes | None, bytes | None], Any]
) -> None:
    """Records of keys spread over the whole key range, as a changelog holds them: every
    memtable flushed overlaps every other."""
    per_batch = MEMORY.memtable_bytes // 120
    offset = 0
    for _ in range(BATCHES):
        records = []
        for i in range(per_batch):
            records.append(make_record(offset, b"key-%06d" % (i * 7919 % per_batch), b"v" * 100))
            offset += 1
        store.restore(records, logged=False)
        store.flush_memtables()  # one level-0 file per batch, whatever the timing


def test_a_restore_defers_compaction_to_its_end_and_never_stalls_writes(
    tmp_path: Path, make_record: Callable[[int, bytes | None, bytes | None], Any]
) -> None:
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    try:
        restore_many_memtables(store, make_record)
        wait_for(lambda: background_idle(store), "RocksDB's background jobs idle")
        # Nothing compacted during the restore: each flushed memtable is still a file of its
        # own (level compaction merges them from 4 on), and writes went on at full speed.
        assert level0_files(store) == BATCHES
        assert not write_delayed_or_stopped(store)
        store.flush_in_background()  # what the task does when its restore completes
        # The running task's writes are not held back while the pile compacts.
        assert not write_delayed_or_stopped(store)
        wait_for(lambda: level0_files(store) < 4, "level 0 compacted once the restore ended")
        store.sync()  # a checkpoint: the stall triggers return to RocksDB's values
        assert not write_delayed_or_stopped(store)
    finally:
        store.close()


def test_a_store_reopened_with_a_pile_of_level0_files_does_not_stall_writes(
    tmp_path: Path, make_record: Callable[[int, bytes | None, bytes | None], Any]
) -> None:
    """A worker stopped before the compaction after a restore finished: its next start must
    not find every write of its task delayed (from 20 level-0 files) or stopped (from 36)."""
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    restore_many_memtables(store, make_record)
    store.sync()
    store.close()
    again = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    try:
        assert not write_delayed_or_stopped(again)
        wait_for(lambda: level0_files(again) < 4, "level 0 compacted after the reopen")
    finally:
        again.close()


def test_a_restore_synced_before_it_completes_compacts_too(
    tmp_path: Path, make_record: Callable[[int, bytes | None, bytes | None], Any]
) -> None:
    """A restoring task suspended (synced, kept open) may stay idle for long: its store must
    not keep its compactions held meanwhile."""
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    try:
        restore_many_memtables(store, make_record)
        store.sync()
        wait_for(lambda: level0_files(store) < 4, "level 0 compacted after the sync")
    finally:
        store.close()


def test_without_the_store_s_own_options_compactions_are_never_held(tmp_path: Path) -> None:
    """Held compactions need raised stall triggers, and those must be put back: a database
    whose OPTIONS file cannot be read is written as usual."""
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    try:
        unknown = BulkLoad(store._db, tmp_path / "elsewhere")
        unknown.begin()
        assert not unknown.loading
        store._bulk.begin()
        assert store._bulk.loading
    finally:
        store.close()


def test_the_pile_counts_while_it_compacts_and_not_while_the_restore_goes_on(
    tmp_path: Path, make_record: Callable[[int, bytes | None, bytes | None], Any]
) -> None:
    """What a restored task waits out before it runs (TaskStores.until_compacted)."""
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    try:
        restore_many_memtables(store, make_record)
        assert store.level0_pile() == 0  # still restoring: nothing compacts, nothing reads
        store._bulk.loading = False  # the restore's end (`BulkLoad.end`), in two steps:
        assert store.level0_pile() == level0_files(store) == BATCHES
        store._db.set_options({"disable_auto_compactions": "false"})  # compactions resume
        wait_for(lambda: store.level0_pile() == 0, "the pile compacted")
        assert level0_files(store) < 10
    finally:
        store.close()


def test_no_pile_is_waited_for_where_the_store_s_own_options_never_compact(
    tmp_path: Path, make_record: Callable[[int, bytes | None, bytes | None], Any]
) -> None:
    def never_compact(name: str, options: Any, table: Any) -> None:
        options.set_disable_auto_compactions(True)

    memory = MemoryBudget(total_bytes=64 * 1024 * 1024, rocksdb_options=never_compact)
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", memory)
    try:
        restore_many_memtables(store, make_record)
        store.flush_in_background()
        assert level0_files(store) == BATCHES
        assert store.level0_pile() == 0  # it would wait forever
    finally:
        store.close()
