"""A worker-like process for test_memory_bound.py: opens stores within one memory budget and
writes through them as running tasks do (puts, then a flush per commit), or as a restore does
(changelog records applied in fetch-sized batches without RocksDB's write-ahead log, one sync at
the end), printing progress.

    python budget_worker.py STATE_DIR BUDGET_BYTES STORES MEGABYTES [process|restore]
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from streamjoin.state.memory import MemoryBudget, return_freed_memory_promptly
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.encoding import window_changelog_key
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.window_store import WindowStore

RECORDS_PER_COMMIT = 1_000
"""Per store: about what a task of the ads join puts between two commits (1 MB)."""
VALUE = b"%01000d"
"""1,000-byte values: the memory at stake is bytes in memtables; larger values than the ads
join's write its 2 GB in fewer puts, so the test takes minutes, not ten."""


class DiscardingWriter:
    """Stands in for the changelog: this process measures local memory only."""

    def append(self, key: bytes, value: bytes | None, timestamp: int | None = None) -> None:
        pass


def open_stores(root: Path, memory: MemoryBudget, count: int) -> list[LocalStore]:
    """Half window stores (30 s of retention), half key-value stores."""
    stores: list[LocalStore] = []
    for i in range(count):
        if i % 2:
            store: LocalStore = KeyValueStore(StoreSpec.kv(f"kv{i}"), root / f"s{i}", memory)
        else:
            spec = StoreSpec.window(f"win{i}", retention_ms=30_000)
            store = WindowStore(spec, root / f"s{i}", memory)
        store.attach_writer(DiscardingWriter())  # type: ignore[arg-type]
        stores.append(store)
    return stores


def process(store: LocalStore, first: int) -> int:
    """One commit interval of a running task: puts, then the commit's flush."""
    written = 0
    for i in range(first, first + RECORDS_PER_COMMIT):
        key = b"key-%d" % (i % 5_000)
        value = VALUE % i  # a new object per record, as decoded from a fetch
        if isinstance(store, WindowStore):
            store.put(key, i, value)  # one record per ms of event time
        else:
            assert isinstance(store, KeyValueStore)
            store.put(key, value)
        written += len(key) + len(value)
    store.begin_flush()
    store.finish_flush()
    return written


def restore(store: LocalStore, first: int) -> int:
    """One fetched batch of changelog records, as the restore reader applies it."""
    records = []
    for i in range(first, first + RECORDS_PER_COMMIT):
        key = b"key-%d" % (i % 5_000)
        if isinstance(store, WindowStore):
            key = window_changelog_key(key, i, i)
        records.append(SimpleNamespace(key=key, value=VALUE % i, timestamp=i, timestamp_type=0))
    store.restore(records, logged=False)
    return sum(len(r.key) + len(r.value) for r in records)


def main(root: Path, budget: int, count: int, megabytes: int, mode: str) -> None:
    return_freed_memory_promptly()  # as the worker does
    memory = MemoryBudget(budget)
    stores = open_stores(root, memory, count)
    write = restore if mode == "restore" else process
    print("opened", flush=True)
    written = commits = 0
    while written < megabytes << 20:
        commits += 1
        for store in stores:
            written += write(store, commits * RECORDS_PER_COMMIT)
        usage = memory.usage()
        print(
            f"written {written >> 20} MiB; write buffers {usage.write_buffers >> 20} MiB, "
            f"block cache {usage.block_cache >> 20} MiB, "
            f"recent records {usage.recent_records >> 20} MiB; "
            f"{memory.forced_flushes} memtables flushed by the budget",
            flush=True,
        )
    for store in stores:
        store.sync()  # a restore's end: what skipped the write-ahead log reaches the files
        store.close()
    print("done", flush=True)


if __name__ == "__main__":
    mode = sys.argv[5] if len(sys.argv) > 5 else "process"
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), mode)
