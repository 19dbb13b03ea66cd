"""A worker-like process for test_memory_bound.py: opens stores within one memory budget and
writes through them as running tasks do (puts, then a flush per commit), printing progress.

    python budget_worker.py STATE_DIR BUDGET_BYTES STORES MEGABYTES
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamjoin.state.kv_store import KeyValueStore
from streamjoin.state.memory import MemoryBudget, return_freed_memory_promptly
from streamjoin.state.specs import StoreSpec
from streamjoin.state.store_base import LocalStore
from streamjoin.state.window_store import WindowStore

RECORDS_PER_COMMIT = 2_000
"""Per store: about what a task of the ads join puts between two commits."""


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


def main(root: Path, budget: int, count: int, megabytes: int) -> None:
    return_freed_memory_promptly()  # as the worker does
    memory = MemoryBudget(budget)
    stores = open_stores(root, memory, count)
    print("opened", flush=True)
    written = commits = 0
    while written < megabytes << 20:
        commits += 1
        for store in stores:
            for i in range(commits * RECORDS_PER_COMMIT, (commits + 1) * RECORDS_PER_COMMIT):
                key = b"key-%d" % (i % 5_000)
                value = b"%0400d" % i  # a new object per record, as decoded from a fetch
                if isinstance(store, WindowStore):
                    store.put(key, i, value)  # one record per ms of event time
                else:
                    assert isinstance(store, KeyValueStore)
                    store.put(key, value)
                written += len(key) + len(value)
            store.begin_flush()
            store.finish_flush()
        usage = memory.usage()
        print(
            f"written {written >> 20} MiB; write buffers {usage.write_buffers >> 20} MiB, "
            f"block cache {usage.block_cache >> 20} MiB, "
            f"recent records {usage.recent_records >> 20} MiB",
            flush=True,
        )
    for store in stores:
        store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
