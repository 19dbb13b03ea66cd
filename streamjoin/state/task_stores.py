"""A task's open stores and the changelog offset that each one's local data reflects.

Opening decides what local data is worth. A store is trusted from the offset its checkpoint
entry names; with no usable entry (no checkpoint, an unreadable one, or one written for another
changelog), or with RocksDB files that cannot be opened, its local data is wiped, with a
warning, and it restores from the beginning.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rocksdict import Rdict

from streamjoin.state.changelog_topics import store_topic
from streamjoin.state.checkpoint import (
    CheckpointUnreadable,
    StoreOffset,
    read_checkpoint,
    write_checkpoint,
)
from streamjoin.state.errors import StateError, StoreLockedError
from streamjoin.state.events import StateEvents, StateWiped
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreKind, StoreSpec, TaskSpec
from streamjoin.state.stores.bulk_load import piled, until_compacted
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.rocks import open_rocksdb
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.versioned_store import VersionedStore
from streamjoin.state.stores.window_store import WindowStore

__all__ = ("TaskStores", "open_databases", "store_class")

logger = logging.getLogger(__name__)

_S = TypeVar("_S", bound=LocalStore)


def store_class(kind: StoreKind) -> type[LocalStore]:
    if kind is StoreKind.KEY_VALUE:
        return KeyValueStore
    if kind is StoreKind.VERSIONED:
        return VersionedStore
    return WindowStore


async def open_databases(
    spec: TaskSpec, directory: StateDirectory, memory: MemoryBudget
) -> dict[str, Rdict]:
    """Store name -> its RocksDB database, all of a task's opened at once on threads.

    Opening creates and syncs files with the GIL released; on the event loop it held the loop
    for each store (40 ms under load), and a worker given 512 tasks stalled its loop for
    seconds and overran the rebalance timeout while opening them. A database that fails to
    open is left out: TaskStores opens it again, and reports or wipes as it does. Cancelled,
    this waits for the opens under way and closes what they opened (each holds a lock).
    """

    def open_or_none(store: StoreSpec) -> Rdict | None:
        try:
            return open_rocksdb(
                directory.store_dir(spec.task_id, store.name), memory.options(store.name)
            )
        except StateError:
            return None

    opening = asyncio.gather(*(asyncio.to_thread(open_or_none, store) for store in spec.stores))
    try:
        databases = await asyncio.shield(opening)
    except asyncio.CancelledError:
        for db in await opening:
            if db is not None:
                db.close()
        raise
    return {s.name: db for s, db in zip(spec.stores, databases, strict=True) if db is not None}


CHECKPOINT_AFTER_RECORDS = 10_000
"""A commit rewrites a task's checkpoint only once its changelogs moved more records than this
past it, as Kafka Streams does: syncing every store and the file at every commit is five fsyncs
per task (13% of a 512-task worker's samples on a backlog). A checkpoint behind the local data
costs only a longer restore after a crash: the changelog replays from it over what RocksDB
holds, and yields what the changelog holds. Suspending and closing always write it, and so does
the first checkpoint after a store was wiped."""


class TaskStores:
    def __init__(
        self,
        spec: TaskSpec,
        *,
        app_id: str,
        directory: StateDirectory,
        events: StateEvents,
        memory: MemoryBudget,
        opened: dict[str, Rdict] | None = None,
    ) -> None:
        """`opened`: databases `open_databases` opened ahead; those used are taken out."""
        self.spec = spec
        self.memory = memory
        self.topics = {store.name: store_topic(app_id, store) for store in spec.stores}
        self.stores: dict[str, LocalStore] = {}
        self.positions: dict[str, int | None] = {}
        """Store name -> changelog offset its local data reflects (None: read from the start)."""
        self._checkpoint_path = directory.checkpoint_path(spec.task_id)
        self._events = events
        try:
            checkpoint = read_checkpoint(self._checkpoint_path)
            problem = "there is no checkpoint"
        except CheckpointUnreadable as exc:
            checkpoint, problem = None, f"the checkpoint is unreadable ({exc})"
        self._last_checkpoint: dict[str, StoreOffset] | None = checkpoint
        """What the checkpoint file says (None: no usable file)."""
        self._wiped = False
        """A store was wiped since the file was written: it names data no longer here."""
        for store_spec in spec.stores:
            db = None if opened is None else opened.pop(store_spec.name, None)
            store, readable = self._open(
                store_spec, directory.store_dir(spec.task_id, store_spec.name), db
            )
            self.stores[store_spec.name] = store
            entry = None if checkpoint is None else checkpoint.get(store_spec.name)
            if (
                readable
                and entry is not None
                and (entry.topic, entry.partition)
                == (
                    self.topics[store_spec.name],
                    spec.partition,
                )
            ):
                self.positions[store_spec.name] = entry.offset
                continue
            self.positions[store_spec.name] = None
            self._wiped = self._wiped or entry is not None  # files unreadable, or another topic's
            if not store.is_empty():
                self.wipe(store, problem if checkpoint is None else "the checkpoint lacks it")

    def _open(self, spec: StoreSpec, path: Path, db: Rdict | None) -> tuple[LocalStore, bool]:
        """The opened store, and False if its files were unreadable and had to be deleted."""
        kind = store_class(spec.kind)
        try:
            return kind(spec, path, self.memory, db), True
        except StoreLockedError:
            raise
        except StateError as exc:
            self._announce_wipe(spec.name, f"its files cannot be opened ({exc})")
            shutil.rmtree(path, ignore_errors=True)
            return kind(spec, path, self.memory), False

    def typed(self, name: str, kind: type[_S]) -> _S:
        store = self.stores.get(name)
        if not isinstance(store, kind):
            raise StateError(f"task {self.spec.task_id!r} has no {kind.__name__} named {name!r}")
        return store

    def wipe(self, store: LocalStore, reason: str) -> None:
        self._announce_wipe(store.name, reason)
        store.wipe()
        self.positions[store.name] = None
        self._wiped = True

    def _announce_wipe(self, store: str, reason: str) -> None:
        logger.warning(
            "task %s: wiping store %r, it will be restored from its changelog's beginning: %s",
            self.spec.task_id,
            store,
            reason,
        )
        self._events.publish(StateWiped(self.spec.task_id, store, reason))

    @property
    def pending_writes(self) -> int:
        return sum(store.pending_count for store in self.stores.values())

    def write_buffer_bytes(self) -> int:
        return sum(store.write_buffer_bytes() for store in self.stores.values())

    @property
    def recent_bytes(self) -> int:
        return sum(store.recent_bytes for store in self.stores.values())

    def position_sum(self) -> int:
        return sum(position or 0 for position in self.positions.values())

    def piled(self) -> bool:
        """Whether a store's restore left a pile of level-0 files (stores/bulk_load.py)."""
        return piled(self.stores.values())

    async def until_compacted(self, then: Callable[[], None]) -> None:
        """Call `then` once RocksDB has compacted what the stores' restores piled up."""
        await until_compacted(f"task {self.spec.task_id}", self.stores)
        then()

    def checkpoint(self, *, enforce: bool = True) -> None:
        """Durably record the positions: sync RocksDB, then replace the checkpoint file.
        Skipped when nothing changed since the last one; unless `enforce`d, also while the
        changelogs moved at most CHECKPOINT_AFTER_RECORDS past it."""
        offsets = self._changed_offsets(enforce)
        if offsets is not None:
            self._sync_and_record(offsets)

    async def checkpoint_off_loop(self, *, enforce: bool = True) -> None:
        """`checkpoint`, with the syncs and the file written on a thread: under load their
        fsyncs took up to half a second per task, a stall of the event loop at every commit.
        Only while nothing else writes to these stores unlogged (a running active's writes are
        logged; restores and standbys write unlogged: use `checkpoint`)."""
        offsets = self._changed_offsets(enforce)
        if offsets is not None:
            await asyncio.to_thread(self._sync_and_record, offsets)

    def _changed_offsets(self, enforce: bool) -> dict[str, StoreOffset] | None:
        offsets = {
            name: StoreOffset(self.topics[name], self.spec.partition, position)
            for name, position in self.positions.items()
            if position is not None
        }
        last = self._last_checkpoint
        if offsets == last:
            return None
        if enforce or self._wiped or last is None or offsets.keys() != last.keys():
            return offsets  # the file names data no longer here, or none at all
        moved = [entry.offset - last[name].offset for name, entry in offsets.items()]
        return offsets if min(moved) < 0 or sum(moved) > CHECKPOINT_AFTER_RECORDS else None

    def _sync_and_record(self, offsets: dict[str, StoreOffset]) -> None:
        for store in self.stores.values():
            store.sync()
        write_checkpoint(self._checkpoint_path, self.spec.task_id, offsets)
        self._last_checkpoint, self._wiped = offsets, False

    def close(self) -> None:
        for store in self.stores.values():
            store.close()

    async def close_off_loop(self) -> None:
        """`close`, with the databases closed on a thread: closing one waits for RocksDB's
        background jobs (tenths of a second each, measured), which the event loop must not."""
        databases = [db for store in self.stores.values() if (db := store.release()) is not None]
        await asyncio.to_thread(_close_all, databases)


def _close_all(databases: list[Rdict]) -> None:
    for db in databases:
        db.close()
