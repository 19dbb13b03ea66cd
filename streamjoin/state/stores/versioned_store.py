"""Versioned key-value store (Kafka Streams' KIP-889): every value of a key with the time from
which it is valid, so a lookup can ask for the value valid at a given time.

Local key:   varint(len(key)) | key | valid_from(8)      value: the table value, b"" deleted
A version is valid from its timestamp until the next version's. Versions arrive in any order
and take their place by timestamp. Observed stream time is the largest timestamp written; the
store keeps `history_ms` (its spec's retention) of history behind it: a write older than that is
dropped, a lookup older than that finds nothing (`too_old`), and versions that ended before it
are deleted when their key is next written (the one valid at the cutoff stays).

It is a table's store fed by the table's topic: restoring applies each record as a write at the
record's timestamp. Writes are idempotent (a version is its key and timestamp), so they go to
RocksDB at once; a flush only advances the store's source position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rocksdict import WriteBatch

from streamjoin.state.stores.encoding import META_KEY, NO_TIME, encode_ts, encode_varint
from streamjoin.state.stores.rocks import scan
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.table_values import pack_table_value

__all__ = ("VersionedStore",)

_TOMBSTONE = b""


def _prefix(key: bytes) -> bytes:
    return encode_varint(len(key)) + key


class VersionedStore(LocalStore):
    """Bytes to versioned bytes. Writes need a running active task; reads work in every role."""

    def _load(self) -> None:
        self.history_ms = self.spec.retention_ms
        meta = self._db.get(META_KEY)
        self.observed_time: int = NO_TIME if meta is None else _decode_ts(meta)

    @property
    def pending_count(self) -> int:
        return 0

    def put(self, key: bytes, valid_from: int, value: bytes | None) -> bool:
        """Store `value` (None: deleted) for `key` from `valid_from` on; False if that is older
        than the history, and nothing was stored."""
        self._require_writer()
        batch = WriteBatch(raw_mode=True)
        stored = self._add(batch, key, valid_from, value)
        self._write(batch)
        return stored

    def too_old(self, timestamp: int) -> bool:
        """Whether a lookup at `timestamp` lies before the history the store keeps."""
        return self.observed_time != NO_TIME and timestamp < self.observed_time - self.history_ms

    def get_as_of(self, key: bytes, timestamp: int) -> bytes | None:
        """The value valid at `timestamp`, None if none was (or it was deleted then). Check
        `too_old` first: history older than the store keeps may be gone."""
        prefix = _prefix(key)
        latest: bytes | None = None
        for _, value in scan(self._db, prefix, prefix + encode_ts(timestamp + 1)):
            latest = value
        return latest or None

    def get_latest_as_of(self, key: bytes, timestamp: int) -> bytes | None:
        """The key's latest version if it is valid at `timestamp` (it never expires, as in
        Kafka Streams' versioned stores: for a lookup older than the history it is all there
        is to find), else None."""
        prefix = _prefix(key)
        found = None
        for local, value in scan(self._db, prefix, prefix + b"\xff" * 9):
            found = (local, value)
        if found is None or _decode_ts(found[0][len(prefix) :]) > timestamp:
            return None
        return found[1] or None

    def versions(self, key: bytes) -> list[tuple[int, bytes | None]]:
        """Every version of `key` the store holds: (valid from, value or None)."""
        prefix = _prefix(key)
        return [
            (_decode_ts(local[len(prefix) :]), value or None)
            for local, value in scan(self._db, prefix, prefix + b"\xff" * 9)
        ]

    def _add(self, batch: WriteBatch, key: bytes, valid_from: int, value: bytes | None) -> bool:
        observed = max(self.observed_time, valid_from)
        cutoff = observed - self.history_ms
        if valid_from < cutoff:
            return False
        prefix = _prefix(key)
        batch.put(prefix + encode_ts(valid_from), _TOMBSTONE if value is None else value)
        ended = [local for local, _ in scan(self._db, prefix, prefix + encode_ts(cutoff + 1))]
        if valid_from > cutoff:
            ended = ended[:-1]  # the latest of them is still valid at the cutoff
        for local in ended:
            if local != prefix + encode_ts(valid_from):
                batch.delete(local)
        if observed != self.observed_time:
            self.observed_time = observed
            batch.put(META_KEY, encode_ts(observed))
        return True

    def _restore_batch(self, records: Sequence[Any]) -> WriteBatch:
        """Source records as writes at their timestamps (keyless ones skipped, as the join
        skips them); versions older than the history are dropped as they would be."""
        batch = WriteBatch(raw_mode=True)
        for record in records:
            key, value = record.key, record.value
            if key is not None:
                stored = (
                    None
                    if value is None
                    else pack_table_value(record.offset, record.timestamp, value)
                )
                self._add(batch, key, record.timestamp, stored)
            self.restored_end = record.offset + 1
        return batch

    def begin_flush(self) -> None:
        self._begin_source_flush()

    def finish_flush(self) -> None:
        self._finish_source_flush()

    def discard_pending(self) -> None:
        self._discard_source_position()


def _decode_ts(data: bytes) -> int:
    return int.from_bytes(data[:8], "big") - (1 << 63)
