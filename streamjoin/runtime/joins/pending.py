"""Left/outer non-matches waiting until no record that could still match them can arrive.

Entries live in a key-value store (so they survive a move through its changelog) under
`timestamp | side | len(key) | key | offset` (timestamp biased by 2**63, integers big-endian):
everything of one (timestamp, side, key) shares a prefix, and a replayed source record rewrites
its own entry instead of adding a second one. The hot path never reads the store: an in-memory
index (prefix -> entries with their values, and per side a heap of prefixes by timestamp),
loaded once when the task opens, answers "what matched" and "what is due" in logarithmic time.
Each side is due by its own cutoff: its window store's stream time decides when its records can
no longer be matched.
"""

from __future__ import annotations

import bisect
import heapq
import struct
from typing import Any

from streamjoin.runtime.joins.records import SIDES, Side
from streamjoin.state.stores.kv_store import KeyValueStore

__all__ = ("PendingNonMatches",)

_BIAS = 1 << 63
_HEAD = struct.Struct(">QBI")  # biased timestamp, side, key length
_OFFSET = struct.Struct(">q")


def _prefix(timestamp: int, side: Side, key: bytes) -> bytes:
    return _HEAD.pack(timestamp + _BIAS, side, len(key)) + key


def _entry_key(held: tuple[bytes, bytes, Any]) -> bytes:
    return held[0]


def _parse(prefix: bytes) -> tuple[int, Side, bytes]:
    biased, side, size = _HEAD.unpack_from(prefix)
    return biased - _BIAS, SIDES[side], prefix[_HEAD.size : _HEAD.size + size]


class PendingNonMatches:
    """Unmatched records of the sides whose non-matches are emitted, oldest first."""

    def __init__(self, store: KeyValueStore) -> None:
        self._store = store
        self._entries: dict[bytes, list[tuple[bytes, bytes, Any]]] = {}
        """prefix -> (store key, stored value, memo) of its pending records, in offset order."""
        self._due: tuple[list[tuple[int, bytes, Side, bytes]], ...] = ([], [])
        """Per side, a (timestamp, prefix, side, key) heap; prefixes already matched are skipped
        when popped (side and key ride along so that popping need not parse the prefix)."""
        for entry, stored in store.range():
            prefix = entry[: -_OFFSET.size]
            timestamp, side, key = _parse(prefix)
            self._index((timestamp, prefix, side, key), entry, stored, None)

    def _index(
        self, due: tuple[int, bytes, Side, bytes], entry: bytes, stored: bytes, memo: Any
    ) -> None:
        """Hold `entry` under its prefix; `due`: (timestamp, prefix, side, key)."""
        prefix = due[1]
        entries = self._entries.get(prefix)
        if entries is None:
            self._entries[prefix] = [(entry, stored, memo)]
            heapq.heappush(self._due[due[2]], due)
        elif entry > entries[-1][0]:
            entries.append((entry, stored, memo))
        else:  # a replay: a lower offset comes after a higher one
            at = bisect.bisect_left(entries, entry, key=_entry_key)
            if entries[at][0] != entry:
                entries.insert(at, (entry, stored, memo))

    def add(
        self,
        timestamp: int,
        side: Side,
        key: bytes,
        offset: int,
        stored: bytes,
        *,
        memo: Any = None,
    ) -> None:
        """Hold a record; `memo` comes back with it from `pop_until` (None after a restart)."""
        prefix = _prefix(timestamp, side, key)
        entry = prefix + _OFFSET.pack(offset)
        self._store.put(entry, stored, timestamp)
        self._index((timestamp, prefix, side, key), entry, stored, memo)

    def discard(self, timestamp: int, side: Side, key: bytes) -> None:
        """Forget every pending record of `side` with this key and timestamp: it has matched."""
        for entry, _, _ in self._entries.pop(_prefix(timestamp, side, key), ()):
            self._store.delete(entry, timestamp)

    def any_before(self, side: Side, timestamp: int) -> bool:
        """Whether `pop_until(side, timestamp)` may yield anything (cheap)."""
        due = self._due[side]
        return bool(due) and due[0][0] < timestamp

    def pop_until(self, side: Side, timestamp: int) -> list[tuple[int, Side, bytes, bytes, Any]]:
        """Remove and return (timestamp, side, key, stored value, memo) of the side's entries
        older than `timestamp`, oldest first (a list: compiled, a generator costs more per
        entry)."""
        due, popped = self._due[side], []
        while due and due[0][0] < timestamp:
            ts, prefix, _, key = heapq.heappop(due)
            entries = self._entries.pop(prefix, None)
            if entries is None:
                continue
            for entry, stored, memo in entries:
                popped.append((ts, side, key, stored, memo))
                self._store.delete(entry, ts)
        return popped
