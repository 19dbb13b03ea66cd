"""A global table's local copy: every partition of its topic in one RocksDB, as Kafka Streams'
global state store, at `<state_dir>/<app_id>/global/<topic>` (`global-<i>/` for process i of a
host's `--processes`).

The topic is its own changelog: records are applied as read (a tombstone deletes, a record
without a key is skipped), and a checkpoint file beside the store keeps the next offset of
every partition, so a restart reads only the tail. Each value is stored with the partition and
offset it came from (an output names its sources in headers).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocksdict import WriteBatch

from streamjoin.state.checkpoint import (
    CheckpointUnreadable,
    StoreOffset,
    read_checkpoint,
    write_checkpoint,
)
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec, check_name
from streamjoin.state.stores.kv_store import KeyValueStore

__all__ = ("GlobalStore", "global_store_dir", "unpack_global")

logger = logging.getLogger(__name__)

_SOURCE = struct.Struct(">iq")


def unpack_global(stored: bytes) -> tuple[int, int, bytes]:
    """(partition, offset, value bytes) of a stored global value."""
    partition, offset = _SOURCE.unpack_from(stored)
    return partition, offset, stored[_SOURCE.size :]


def global_store_dir(directory: StateDirectory, topic: str, process: int | None = None) -> Path:
    """`process`: the index of a worker among its host's `--processes`, which share the state
    directory; each keeps a copy of its own (RocksDB lets one process open a store)."""
    copies = "global" if process is None else f"global-{process}"
    return directory.app_dir / copies / check_name("topic", topic)


class GlobalStore(KeyValueStore):
    """The whole table of one topic; written only from the topic, read by every task."""

    def __init__(
        self,
        topic: str,
        directory: StateDirectory,
        memory: MemoryBudget,
        process: int | None = None,
    ) -> None:
        self.topic = topic
        path = global_store_dir(directory, topic, process)
        self.checkpoint_path = path.with_name(path.name + ".checkpoint")
        self.positions: dict[int, int] = {}
        """Partition -> the next offset to apply (what the store reflects)."""
        self.applied = 0
        """Records applied since the store was opened."""
        super().__init__(StoreSpec.kv(f"global-{topic}"), path, memory)
        self._read_checkpoint()

    def _read_checkpoint(self) -> None:
        try:
            entries = read_checkpoint(self.checkpoint_path)
        except CheckpointUnreadable as exc:
            logger.warning("global table %s: %s; restoring from the beginning", self.topic, exc)
            entries = None
        if entries is None:
            if not self.is_empty():
                self.wipe()  # data without a checkpoint: its extent is unknown
            return
        self.positions = {e.partition: e.offset for e in entries.values() if e.topic == self.topic}

    def lookup(self, key: bytes) -> bytes | None:
        """The stored value of `key` (see `unpack_global`), None if the table has none."""
        stored: bytes | None = self._db.get(key)
        return stored

    def apply(self, partition: int, records: Sequence[Any], *, logged: bool = True) -> None:
        """Apply records of one partition in offset order (aiokafka ConsumerRecords)."""
        if not records:
            return
        self._write(self._restore_batch(records), logged=logged)
        self.positions[partition] = int(records[-1].offset) + 1
        self.applied += len(records)

    def _restore_batch(self, records: Sequence[Any]) -> WriteBatch:
        batch = WriteBatch(raw_mode=True)
        pack = _SOURCE.pack
        for record in records:
            key = record.key
            if key is None:
                continue  # a table record needs a key (Kafka Streams skips it too)
            value = record.value
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, pack(record.partition, record.offset) + value)
        return batch

    def checkpoint(self) -> None:
        """Make the applied records durable, then record how far they go."""
        self.sync()
        write_checkpoint(
            self.checkpoint_path,
            f"global/{self.topic}",
            {str(p): StoreOffset(self.topic, p, o) for p, o in sorted(self.positions.items())},
        )

    def wipe(self) -> None:
        """Start empty and from the topic's beginning (the checkpoint goes too)."""
        self.checkpoint_path.unlink(missing_ok=True)
        self.positions = {}
        super().wipe()
