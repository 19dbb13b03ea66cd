"""The bridge between one store of a task and the changelog reader (the reader's sink for that
store's changelog partition)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamjoin.state.phases import TaskPhase
from streamjoin.state.stores.store_base import LocalStore

if TYPE_CHECKING:
    from streamjoin.state.task_state import TaskState

__all__ = ("StoreChangelog", "later_position")


class StoreChangelog:
    """Connects one store to the changelog reader (the reader's sink)."""

    def __init__(self, task: TaskState, store: LocalStore) -> None:
        self._task = task
        self._store = store

    def start_offset(self) -> int | None:
        return self._task.positions[self._store.name]

    def apply(self, records: list[Any]) -> None:
        # A restoring active skips RocksDB's log (synced once, when it completes); a standby,
        # checkpointed at commits, keeps it so that a checkpoint costs no memtable flush.
        self._store.restore(records, logged=self._task.phase is not TaskPhase.RESTORING)
        self._task.restored += len(records)

    def progress(self, position: int, highwater: int, stable: int) -> None:
        self._task.on_progress(self._store.name, position, highwater, stable)

    def reset(self, reason: str) -> None:
        self._task.on_reset(self._store, reason)

    def fail(self, error: BaseException) -> None:
        self._task.on_failure(error)


def later_position(position: int | None, flushed: int | None) -> int | None:
    """A source-fed store's position after a flush: the task may still be processing source
    records its restore already applied."""
    if flushed is None:
        return position
    return flushed if position is None else max(position, flushed)
