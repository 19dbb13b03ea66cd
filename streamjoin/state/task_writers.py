"""A running active's changelog writers, one per store: what a flush or an exactly-once commit
sends, waits for the broker to confirm, and only then writes to RocksDB."""

from __future__ import annotations

from typing import Any

from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.errors import ChangelogWriteError
from streamjoin.state.store_changelog import later_position
from streamjoin.state.task_stores import TaskStores

__all__ = ("TaskWriters",)


class TaskWriters:
    """Attached to the stores while the task runs; TaskState holds its lock around each call."""

    def __init__(self, producer: Any, local: TaskStores) -> None:
        self._producer = producer
        self._local = local
        self._writers: dict[str, ChangelogWriter] = {}

    def attach(self) -> None:
        """The task runs: each store's writes go to its changelog from now on."""
        partition = self._local.spec.partition
        for name, store in self._local.stores.items():
            writer = ChangelogWriter(self._producer, self._local.topics[name], partition)
            self._writers[name] = writer
            store.attach_writer(writer)

    async def send(self) -> dict[str, int | None]:
        """Send the writes so far and wait for the broker: store name -> confirmed changelog
        end. On ChangelogWriteError the unconfirmed writes are dropped and the writers closed."""
        stores = self._local.stores
        marks = {}
        for name, store in stores.items():
            store.begin_flush()
            marks[name] = self._writers[name].seal()
        confirmed: dict[str, int | None] = {}
        try:
            for name, mark in marks.items():
                confirmed[name] = await self._writers[name].wait_confirmed(mark)
        except ChangelogWriteError:
            for store in stores.values():
                store.discard_pending()
            await self.close()
            raise
        return confirmed

    def apply(self, confirmed: dict[str, int | None]) -> None:
        """Write what `send` confirmed to RocksDB and move the positions to it."""
        positions = self._local.positions
        for name, store in self._local.stores.items():
            store.finish_flush()
            if store.spec.source_topic is not None:
                confirmed[name] = later_position(positions[name], store.flushed_position)
            if confirmed[name] is not None:
                positions[name] = confirmed[name]

    async def close(self) -> None:
        for store in self._local.stores.values():
            store.attach_writer(None)
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            await writer.close()
