"""The memory settings from before the worker's memory budget, as a benchmark's baseline,
through the public hook (`App(rocksdb_options=...)`): each store a RocksDB of its own defaults
(64 MiB write buffers, no shared limit, a 32 MiB block cache of its own, Snappy), and 32 MiB of
newest records per window store (a shared figure that large never binds)."""

from __future__ import annotations

from typing import Any

from rocksdict import BlockBasedOptions, Cache, DBCompressionType, Options, WriteBufferManager

__all__ = ("unbounded_settings",)

MIB = 1 << 20
_STORES = 1024
"""Window stores a worker could hold, for the newest records' figure."""


def rocksdb_defaults(store_name: str, options: Options, table: BlockBasedOptions) -> None:
    options.set_write_buffer_manager(WriteBufferManager(0, False))  # 0: no limit
    options.set_write_buffer_size(64 * MIB)
    options.set_level_compaction_dynamic_level_bytes(True)
    options.set_target_file_size_base(64 * MIB)
    options.set_max_bytes_for_level_base(256 * MIB)
    options.set_compression_type(DBCompressionType.snappy())
    options.set_compression_per_level([])
    options.set_stats_persist_period_sec(600)
    table.set_block_cache(Cache(32 * MIB))


def unbounded_settings() -> dict[str, Any]:
    """`App` settings for the baseline."""
    recent = 32 * MIB * _STORES
    return {
        # Twice that: the input buffers' sixteenth (4 GiB) never binds either, as before the
        # budget; the RocksDB part goes unused (each store has its own cache).
        "memory_budget_bytes": 2 * recent,
        "window_memory_bytes": recent,
        "rocksdb_options": rocksdb_defaults,
    }
