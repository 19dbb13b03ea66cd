"""What the key-value and window stores share: a RocksDB database plus unconfirmed writes.

An active store keeps its writes in memory (`pending`). A flush sends them to the changelog and
moves them aside (`begin_flush`), waits for the broker to confirm the changelog records, and
only then writes them to RocksDB in one batch (`finish_flush`). So the local database never
holds a write the changelog lacks: after a crash, replaying the changelog from the checkpoint
yields exactly what the changelog holds. Reads see pending writes first. Logging at the flush
rather than at each write lets a store leave out writes that no longer matter by then.

A table's store fed by the table's own topic (`StoreSpec.source_topic`) logs nothing: its
position is the offset after the last source record a flush put in RocksDB.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocksdict import Rdict, WriteBatch, WriteOptions

from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.errors import StoreNotWritableError
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.bulk_load import BulkLoad
from streamjoin.state.stores.byte_budget import HeldBytes
from streamjoin.state.stores.rocks import open_rocksdb

__all__ = ("LocalStore",)

_UNLOGGED = WriteOptions()
_UNLOGGED.disable_wal = True  # type: ignore[method-assign, assignment]  # a property; stub says method


class LocalStore(ABC):
    """One store of one task, backed by its own RocksDB directory, within the worker's memory
    budget (shared block cache and write buffers; a window store's newest records)."""

    def __init__(
        self, spec: StoreSpec, path: Path, memory: MemoryBudget, db: Rdict | None = None
    ) -> None:
        """`db`: the database at `path`, if opened already (with `memory`'s options)."""
        self.spec = spec
        self.path = path
        self.memory = memory
        self._db: Rdict = open_rocksdb(path, memory.options(spec.name)) if db is None else db
        self._bulk = BulkLoad(self._db, path)
        memory.store_opened(self)
        self.index_memory = HeldBytes(memory.pending)
        """What an index kept beside this store holds (a join's pending non-matches), given
        back to the budget when the store closes."""
        self._closed = False
        self._writer: ChangelogWriter | None = None
        self._unlogged = False
        self._source_position: int | None = None
        self._flushing_position: int | None = None
        self.flushed_position: int | None = None
        """Source-fed store: the offset after the last source record a flush wrote to RocksDB
        (None: none since it opened)."""
        self.restored_end = 0
        """Source-fed store: the offset after the last source record restored; the task may
        process records below it again, which are then already applied."""
        self._load()

    @property
    def name(self) -> str:
        return self.spec.name

    def attach_writer(self, writer: ChangelogWriter | None) -> None:
        """Make the store writable through `writer`, or read-only with None (its task no
        longer runs: the index its join kept beside it is gone)."""
        self._writer = writer
        if writer is None:
            self.index_memory.release()

    def source_applied(self, offset: int) -> None:
        """Source-fed store: the source record at `offset` is applied (written or skipped)."""
        self._source_position = offset + 1

    def _begin_source_flush(self) -> None:
        self._flushing_position = self._source_position

    def _finish_source_flush(self) -> None:
        if self._flushing_position is not None:
            self.flushed_position, self._flushing_position = self._flushing_position, None

    def _discard_source_position(self) -> None:
        self._source_position = self._flushing_position = None

    def _require_writer(self) -> ChangelogWriter:
        writer = self._writer
        if writer is None:
            raise StoreNotWritableError(
                f"store {self.name!r} at {self.path} is read-only: its task is not a running active"
            )
        return writer

    @property
    @abstractmethod
    def pending_count(self) -> int:
        """Writes not yet in RocksDB (pending and being flushed)."""

    @property
    def recent_bytes(self) -> int:
        """Memory the store's newest records take (window stores)."""
        return 0

    def write_buffer_bytes(self) -> int:
        """Memory of the store's memtables (its part of the shared write buffers)."""
        return self._db.property_int_value("rocksdb.cur-size-all-mem-tables") or 0

    @abstractmethod
    def _load(self) -> None:
        """Read whatever in-memory state the store keeps next to the database."""

    def restore(self, records: Sequence[Any], *, logged: bool = True) -> None:
        """Apply changelog records (aiokafka ConsumerRecords, in offset order) to RocksDB.

        `logged=False` skips RocksDB's write-ahead log, for a bulk restore: the records are
        only durable once `sync` has flushed them (the changelog still has them meanwhile).
        """
        self._write(self._restore_batch(records), logged=logged)

    @abstractmethod
    def _restore_batch(self, records: Sequence[Any]) -> WriteBatch:
        """The batch that applies changelog records."""

    def _write(self, batch: WriteBatch, *, logged: bool = True) -> None:
        if logged:
            self._bulk.end()  # a standby's or running task's writes: compact as usual
            self._db.write(batch)
        else:
            self._bulk.begin()
            self._db.write(batch, _UNLOGGED)
            self._unlogged = True
        self.memory.relieve_write_buffers()

    @abstractmethod
    def begin_flush(self) -> None:
        """Send the pending writes to the changelog and set them aside; new writes start a
        fresh pending layer."""

    @abstractmethod
    def finish_flush(self) -> None:
        """Write the set-aside writes to RocksDB (their changelog records are confirmed)."""

    @abstractmethod
    def discard_pending(self) -> None:
        """Forget every write not yet in RocksDB (their changelog delivery failed or is moot)."""

    def is_empty(self) -> bool:
        return next(iter(self._db.keys()), None) is None

    def sync(self) -> None:
        """Make what RocksDB holds durable before a checkpoint refers to it."""
        if self._unlogged:
            self._db.flush()  # memtables to disk: the only copy of unlogged writes
            self._unlogged = False
        else:
            self._db.flush_wal(True)
        self._bulk.end()  # a restoring task suspended or closed: compact what it wrote
        self._bulk.settle()

    def level0_pile(self) -> int:
        """Level-0 files a restore left, compacting, that reads should not meet (BulkLoad)."""
        return 0 if self._closed else self._bulk.pile()

    def flush_memtables(self) -> None:
        """Write the memtables to disk and wait: the budget's back-pressure (memory.py)."""
        if not self._closed:
            self._db.flush()

    def flush_in_background(self) -> None:
        """Start writing unlogged data to disk on RocksDB's own threads, so `sync` is quick
        (a restore ended: its pile of level-0 files compacts meanwhile)."""
        self._bulk.end()
        if self._unlogged:
            self._db.flush(False)

    def wipe(self) -> None:
        """Delete the store's data and start empty (the changelog will refill it)."""
        self.discard_pending()
        self._db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = open_rocksdb(self.path, self.memory.options(self.name))
        self._bulk = BulkLoad(self._db, self.path)
        self._unlogged = False
        self._load()

    def close(self) -> None:
        """Close the database; pending writes are dropped and memory goes back to the budget."""
        db = self.release()
        if db is not None:
            db.close()

    def release(self) -> Rdict | None:
        """Stop using the database, as `close` does, and return it for the caller to close
        (on another thread: RocksDB waits for its background jobs); None if already done."""
        if self._closed:
            return None
        self._closed = True
        self.discard_pending()
        self._writer = None
        self.memory.store_closed(self)
        self.index_memory.release()
        return self._db
