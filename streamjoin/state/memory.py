"""One memory budget per worker, shared by every store it opens, however many tasks it runs.

Each store is its own RocksDB database, and RocksDB's defaults size memory per database: two
64 MiB write buffers and a block cache each, so memory grew with the number of stores rather
than with the data. As Kafka Streams' bounded-memory configuration does, every database of a
worker here uses one LRU block cache and one WriteBufferManager charged to that cache, so the
write buffers, data blocks and index blocks of all stores together stay within the cache's
capacity. RocksDB only schedules a flush once the write buffers reach their limit, on its own
threads, which a loaded machine runs late, and writes never stall (the event loop must keep
heartbeating): so every write to a store also checks the shared usage, and past the limit the
budget flushes the largest memtables then and there (`relieve_write_buffers`), running tasks
and restores alike. The window stores' newest records
(stores/recent_records.py) take the rest of the budget, also one figure for all of them.

A store opened later (a learner, a standby, a task after a rebalance) joins the same budget;
closing a store gives its share back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass
from operator import itemgetter
from typing import Protocol

from rocksdict import BlockBasedOptions, Cache, DBCompressionType, Options, WriteBufferManager

from streamjoin.memory_settings import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    MIB,
    RocksDBOptionsSetter,
    fetch_share,
    format_size,
    input_share,
    pending_share,
    recent_share,
)
from streamjoin.state.stores.byte_budget import ByteBudget

__all__ = (
    "STORE_OVERHEAD_BYTES",
    "MemoryBudget",
    "MemoryUsage",
    "MemtableHolder",
    "return_freed_memory_promptly",
)

STORE_OVERHEAD_BYTES = MIB
"""What an open store costs beyond its memtables and cached blocks (its write-ahead log's
buffer, table readers, version metadata and the allocator's share of them), about: measured,
40 stores with few records took 8 MiB, and their churn under writes as much again."""


_WORTH_FLUSHING = 64 * 1024
"""Memtables smaller than this are not flushed to relieve the write buffers: an empty one
holds its arena's first block already, and flushing it would free nothing."""


_M_MMAP_THRESHOLD = -3
"""glibc's mallopt parameter number (malloc.h)."""


def return_freed_memory_promptly() -> bool:
    """Have glibc serve blocks of 128 KiB and more (memtable arena blocks) from their own
    mappings, returned to the system when freed. By default glibc raises that threshold each
    time such a block is freed, up to 32 MiB, after which freed memtables stay in its heap:
    measured, a process within a 128 MiB budget then held 90 MiB more than it used. False
    where the C library is not glibc (nothing changed)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 128 * 1024))


class MemtableHolder(Protocol):
    """An open store, as the budget sees it."""

    def write_buffer_bytes(self) -> int:
        """Memory of its memtables (active and not yet flushed)."""
        ...

    def flush_memtables(self) -> None:
        """Write its memtables to disk and wait until they are freed."""
        ...


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """Bytes in use now, by kind."""

    write_buffers: int
    block_cache: int
    """Data, index and filter blocks (the cache's usage less the write buffers' charge)."""
    recent_records: int
    pending_non_matches: int

    @property
    def total(self) -> int:
        return (
            self.write_buffers + self.block_cache + self.recent_records + self.pending_non_matches
        )


class MemoryBudget:
    """The worker's memory for state: RocksDB's part (block cache holding the write buffers'
    charge), the newest window records' part, the pending non-matches' part, the input buffers'
    part and the fetch answers' part."""

    def __init__(
        self,
        total_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
        *,
        recent_bytes: int | None = None,
        rocksdb_options: RocksDBOptionsSetter | None = None,
    ) -> None:
        """`recent_bytes`: the newest window records' part (default five sixteenths)."""
        recent = recent_share(total_bytes, recent_bytes)
        self.total_bytes = total_bytes
        self.recent_bytes = recent
        self.recent = ByteBudget(recent)
        self._stores: set[MemtableHolder] = set()
        self.forced_flushes = 0
        """Memtables flushed by `relieve_write_buffers` (RocksDB's own flushes fell behind)."""
        self.input_bytes = input_share(total_bytes)
        """Fetched records waiting in the tasks' input buffers, all tasks together (the worker
        pauses fetching past it; see runtime/tasks/input_size.py)."""
        self.fetch_bytes = fetch_share(total_bytes)
        """Fetch answers the worker's consumer holds until its tasks read them (its fetch
        sizes follow the assignment: kafka/fetch_sizes.py)."""
        self.pending = ByteBudget(pending_share(total_bytes))
        """The joins' pending non-matches held in memory, all tasks together (past it, they wait
        in their stores: runtime/joins/pending.py)."""
        self.rocksdb_bytes = (
            total_bytes - recent - self.pending.max_bytes - self.input_bytes - self.fetch_bytes
        )
        # A third: memtables overshoot the limit while their flushes run (measured: by half).
        self.write_buffer_bytes = self.rocksdb_bytes // 3
        self.memtable_bytes = min(max(self.write_buffer_bytes // 16, MIB), 8 * MIB)
        """One store's memtable size: small, so that a flush frees little at a time and the
        write buffers' limit, not each store's, decides when memtables flush."""
        self.block_cache = Cache(self.rocksdb_bytes)
        # No stall: writes happen on the event loop, which must keep heartbeating; a write
        # past the limit makes RocksDB flush that store's memtable instead.
        self.write_buffers = WriteBufferManager.new_write_buffer_manager_with_cache(
            self.write_buffer_bytes, False, self.block_cache
        )
        self._setter = rocksdb_options

    @property
    def open_stores(self) -> int:
        return len(self._stores)

    def store_opened(self, store: MemtableHolder) -> None:
        """A store costs memory outside the cache (see STORE_OVERHEAD_BYTES): the newest
        records' part gives it up while the store is open."""
        self._stores.add(store)
        self._resize_recent()

    def store_closed(self, store: MemtableHolder) -> None:
        self._stores.discard(store)
        self._resize_recent()

    def relieve_write_buffers(self) -> int:
        """Back-pressure, called after every write: once the memtables of all stores together
        pass their limit, flush the largest ones now, waiting, until they are back under three
        quarters of it (room for the next writes before flushing again); returns how many
        flushed. Without it they reached 38-57 MiB against a 26 MiB limit on a loaded machine:
        RocksDB's background flushes lagged behind the writes it does not stall."""
        usage = self.write_buffers.get_usage()
        if usage <= self.write_buffer_bytes:
            return 0
        floor = self.write_buffer_bytes * 3 // 4
        sized = sorted(
            ((s.write_buffer_bytes(), s) for s in tuple(self._stores)), key=itemgetter(0)
        )
        flushed = 0
        while sized and usage > floor:
            size, store = sized.pop()
            if size < _WORTH_FLUSHING:
                break  # what is left is not in memtables (pinned by iterators, say)
            store.flush_memtables()
            flushed += 1
            usage = self.write_buffers.get_usage()
        self.forced_flushes += flushed
        return flushed

    def _resize_recent(self) -> None:
        reserved = self.open_stores * STORE_OVERHEAD_BYTES
        self.recent.max_bytes = max(0, self.recent_bytes - reserved)

    def options(self, store_name: str) -> Options:
        """Options for opening one store's database within this budget."""
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_write_buffer_manager(self.write_buffers)
        options.set_write_buffer_size(self.memtable_bytes)
        options.set_max_write_buffer_number(2)
        # Values are small and short-lived (window stores drop whole segments once they
        # expire): level compaction sized to the small memtables, frequent flushes written
        # uncompressed (most records expire before they are compacted), LZ4 below level 0.
        options.set_level_compaction_dynamic_level_bytes(True)
        options.set_target_file_size_base(4 * self.memtable_bytes)
        options.set_max_bytes_for_level_base(16 * self.memtable_bytes)
        options.set_compression_per_level(
            [DBCompressionType.none()] + [DBCompressionType.lz4()] * 6
        )
        # Memory each database holds outside the cache: statistics history (kept in memory
        # by default) and the write-ahead log's buffer (1 MiB by default, per database).
        options.set_stats_persist_period_sec(0)
        options.set_writable_file_max_buffer_size(128 * 1024)
        options.set_keep_log_file_num(2)
        table = BlockBasedOptions()
        table.set_block_cache(self.block_cache)
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_top_level_index_and_filter(True)
        if self._setter is not None:
            self._setter(store_name, options, table)
        options.set_block_based_table_factory(table)
        return options

    def usage(self) -> MemoryUsage:
        write_buffers = self.write_buffers.get_usage()
        return MemoryUsage(
            write_buffers=write_buffers,
            block_cache=max(0, self.block_cache.get_usage() - write_buffers),
            recent_records=self.recent.used_bytes,
            pending_non_matches=self.pending.used_bytes,
        )

    def describe(self) -> str:
        """One line for the worker's log."""
        return (
            f"memory budget {format_size(self.total_bytes)}: RocksDB block cache "
            f"{format_size(self.rocksdb_bytes)} holding write buffers up to "
            f"{format_size(self.write_buffer_bytes)} ({format_size(self.memtable_bytes)} "
            f"memtables), newest window records {format_size(self.recent_bytes)} less "
            f"{format_size(STORE_OVERHEAD_BYTES)} per open store, pending non-matches "
            f"{format_size(self.pending.max_bytes)}, fetched records waiting for "
            f"their tasks {format_size(self.input_bytes)}, fetch answers not yet read "
            f"{format_size(self.fetch_bytes)}; shared by every store and task of this worker"
        )
