"""Left/outer non-matches waiting until no record that could still match them can arrive.

Entries live in a key-value store under `timestamp | side | len(key) | key | offset` (timestamp
biased by 2**63 and all integers big-endian, so byte order is time order), so the
oldest come first, everything of one (timestamp, side, key) is one prefix (a match removes the
lot), and a replayed source record rewrites its own entry instead of adding a second one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from streamjoin.runtime.joins.records import Side
from streamjoin.state.kv_store import KeyValueStore

__all__ = ("PendingNonMatches",)

_BIAS = 1 << 63
_HEAD = struct.Struct(">QBI")  # biased timestamp, side, key length
_TIME = struct.Struct(">Q")
_OFFSET = struct.Struct(">q")


def _prefix(timestamp: int, side: Side, key: bytes) -> bytes:
    return _HEAD.pack(timestamp + _BIAS, side, len(key)) + key


def _time_bound(timestamp: int) -> bytes:
    return _TIME.pack(timestamp + _BIAS)


def _oldest(store: KeyValueStore) -> int | None:
    first = next(iter(store.range()), None)
    return None if first is None else _TIME.unpack_from(first[0])[0] - _BIAS


def _after(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string starting with `prefix`."""
    return prefix + b"\xff" * 9


class PendingNonMatches:
    """Unmatched records of the sides whose non-matches are emitted, oldest first."""

    def __init__(self, store: KeyValueStore) -> None:
        self._store = store
        self._oldest = _oldest(store)

    @property
    def oldest_timestamp(self) -> int | None:
        return self._oldest

    def add(self, timestamp: int, side: Side, key: bytes, offset: int, stored: bytes) -> None:
        entry = _prefix(timestamp, side, key) + _OFFSET.pack(offset)
        self._store.put(entry, stored, timestamp)
        if self._oldest is None or timestamp < self._oldest:
            self._oldest = timestamp

    def discard(self, timestamp: int, side: Side, key: bytes) -> None:
        """Forget every pending record of `side` with this key and timestamp: it has matched."""
        prefix = _prefix(timestamp, side, key)
        for entry, _ in list(self._store.range(prefix, _after(prefix))):
            self._store.delete(entry, timestamp)

    def pop_until(self, timestamp: int) -> Iterator[tuple[int, Side, bytes, bytes]]:
        """Remove and yield (timestamp, side, key, stored value) of entries older than
        `timestamp`, oldest first."""
        if self._oldest is None or self._oldest >= timestamp:
            return
        expired = list(self._store.range(None, _time_bound(timestamp)))
        for entry, stored in expired:
            biased, side, size = _HEAD.unpack_from(entry)
            ts = biased - _BIAS
            yield ts, Side(side), entry[_HEAD.size : _HEAD.size + size], stored
            self._store.delete(entry, ts)
        self._oldest = _oldest(self._store)
