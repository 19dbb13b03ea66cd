"""Key-value store: the latest value per key, ordered by key bytes, changelog compacted.

Writes reach the changelog when a flush begins, one record per key for its last write since the
previous flush (as Kafka Streams' record cache does): a key written many times between commits
costs one changelog record, and one created and deleted between commits costs none. The pending
non-matches of a join are such keys whenever a match comes within a commit interval.

A table's store whose spec names a source topic logs nothing: the topic is its changelog. Its
restore keeps each record's offset and timestamp with the value (`table_values`), as the join
writing it does, and its position is the offset after the last source record it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from rocksdict import WriteBatch

from streamjoin.errors import ProtocolDecodeError
from streamjoin.state.stores.rocks import scan
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.table_values import pack_table_value

__all__ = ("KeyValueStore", "merge_overlay")

_MISSING = object()


def merge_overlay(
    base: Iterable[tuple[bytes, bytes]], overlay: Sequence[tuple[bytes, bytes | None]]
) -> Iterator[tuple[bytes, bytes]]:
    """Merge two key-ordered streams; `overlay` wins on equal keys and its None values delete."""
    pending = iter(overlay)
    head = next(pending, None)
    for key, value in base:
        while head is not None and head[0] < key:
            if head[1] is not None:
                yield head[0], head[1]
            head = next(pending, None)
        if head is not None and head[0] == key:
            if head[1] is not None:
                yield head[0], head[1]
            head = next(pending, None)
            continue
        yield key, value
    while head is not None:
        if head[1] is not None:
            yield head[0], head[1]
        head = next(pending, None)


class KeyValueStore(LocalStore):
    """Bytes to bytes. Writes need a running active task; reads work in every role."""

    def _load(self) -> None:
        self._pending: dict[bytes, bytes | None] = {}
        self._stamps: dict[bytes, int | None] = {}
        """Changelog timestamp of each pending key's last write."""
        self._flushing: dict[bytes, bytes | None] = {}

    @property
    def pending_count(self) -> int:
        return len(self._pending) + len(self._flushing)

    def get(self, key: bytes) -> bytes | None:
        value = self._pending.get(key, _MISSING)
        if value is _MISSING:
            value = self._flushing.get(key, _MISSING)
            if value is _MISSING:
                return cast("bytes | None", self._db.get(key))
        return value  # type: ignore[return-value]

    def put(self, key: bytes, value: bytes, timestamp: int | None = None) -> None:
        """Set `key`; `timestamp` (ms) stamps the changelog record, default the flush's time."""
        self._require_writer()
        self._pending[key] = value
        self._stamps[key] = timestamp

    def delete(self, key: bytes, timestamp: int | None = None) -> None:
        self._require_writer()
        self._pending[key] = None
        self._stamps[key] = timestamp

    def range(
        self, start: bytes | None = None, end: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """Entries with start <= key < end in key order, as of this call."""
        layered = dict(self._flushing)
        layered.update(self._pending)
        overlay = sorted(
            (key, value)
            for key, value in layered.items()
            if (start is None or key >= start) and (end is None or key < end)
        )
        return merge_overlay(scan(self._db, start, end), overlay)

    def _restore_batch(self, records: Sequence[Any]) -> WriteBatch:
        if self.spec.source_topic is not None:
            return self._restore_source(records)
        batch = WriteBatch(raw_mode=True)
        put, delete = batch.put, batch.delete
        record = None
        try:
            for record in records:
                value = record.value
                if value is None:
                    delete(record.key)
                else:
                    put(record.key, value)
        except (KeyError, TypeError) as exc:
            offset = getattr(record, "offset", "?")
            raise ProtocolDecodeError(
                f"changelog record at offset {offset} for store {self.name!r} has no bytes key"
            ) from exc
        return batch

    def _restore_source(self, records: Sequence[Any]) -> WriteBatch:
        """Records of the table's topic; keyless ones are skipped, as the join skips them."""
        batch = WriteBatch(raw_mode=True)
        for record in records:
            key, value = record.key, record.value
            if key is not None:
                if value is None:
                    batch.delete(key)
                else:
                    batch.put(key, pack_table_value(record.offset, record.timestamp, value))
            self.restored_end = record.offset + 1
        return batch

    def begin_flush(self) -> None:
        """Send each pending key's last write to the changelog and set the writes aside; a
        deletion of a key that neither RocksDB nor an unfinished flush holds is dropped."""
        pending, stamps, flushing = self._pending, self._stamps, self._flushing
        if self.spec.source_topic is not None:
            flushing.update(pending)
            self._begin_source_flush()
            self._pending, self._stamps = {}, {}
            return
        if pending:
            append, stored = self._require_writer().append, self._db.get
            for key, value in pending.items():
                if value is None and key not in flushing and stored(key) is None:
                    continue  # created and deleted since the last flush
                append(key, value, stamps[key])
                flushing[key] = value
        self._pending, self._stamps = {}, {}

    def finish_flush(self) -> None:
        self._finish_source_flush()
        if not self._flushing:
            return
        batch = WriteBatch(raw_mode=True)
        for key, value in self._flushing.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        self._write(batch)
        self._flushing = {}

    def discard_pending(self) -> None:
        self._pending, self._stamps, self._flushing = {}, {}, {}
        self._discard_source_position()
