"""Left/outer non-matches waiting until no record that could still match them can arrive.

Entries live in a key-value store (so they survive a move through its changelog) under
`timestamp | side | len(key) | key | offset` (timestamp biased by 2**63, integers big-endian):
everything of one (timestamp, side, key) shares a prefix, and a replayed source record rewrites
its own entry instead of adding a second one.

The hot path answers "what matched" and "what is due" from an in-memory index (prefix ->
entries with their values, and per side a heap of prefixes by timestamp), held to the pending
non-matches' part of the worker's memory budget (state/memory.py), which every task's index
shares. Unbounded, it took 900 bytes a record: at 12,000 records/s the ads join's unclicked
impressions, 65 s each, held 360 MiB. So per side the index holds the oldest entries, those
below a horizon, and past its part it lets go of its newest ones (lowering the horizon);
entries at or above the horizon are in the store only. As they fall due, they come back in
chunks read from the store in key order (raising the horizon), and a match of one of them
deletes it by its key, which the matched record's offset completes. Kafka Streams likewise
keeps these records in a store and reads them back when their window closes (KIP-633).
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

__all__ = ("ENTRY_OVERHEAD_BYTES", "PendingNonMatches")

_BIAS = 1 << 63
_HEAD = struct.Struct(">QBI")  # biased timestamp, side, key length
_TIME = struct.Struct(">Q")
_OFFSET = struct.Struct(">q")

ENTRY_OVERHEAD_BYTES = 450
"""What an entry costs in memory besides its bytes (the store key twice, as entry and prefix,
and the stored value): tuples, list, dict slot, heap entry and their headers, an estimate
for the budget. A memo is charged as much again as the value."""

_RELOAD_LEAST_ENTRIES = 256
"""Entries one reload brings back into memory at least, however full the budget (fewer store
reads while every task's index competes for it)."""

_RELOAD_MOST_ENTRIES = 2_000
"""Entries one reload brings back at most: a reload holds up the records behind it."""

_FIRST_SPAN_MS = 1_000
"""Timestamps a side's first reload reads; later ones halve or double it to bring back about
`_RELOAD_MOST_ENTRIES` (a read's cost grows with the store's unflushed writes, not the span)."""

Held = tuple[bytes, bytes, Any]
"""(store key, stored value, memo)"""

Due = tuple[int, bytes, Side, bytes]
"""(timestamp, prefix, side, key)"""


def _prefix(timestamp: int, side: Side, key: bytes) -> bytes:
    return _HEAD.pack(timestamp + _BIAS, side, len(key)) + key


def _time(timestamp: int) -> bytes:
    """Where entries of `timestamp` begin in the store."""
    return _TIME.pack(timestamp + _BIAS)


def _entry_key(held: Held) -> bytes:
    return held[0]


def _parse(prefix: bytes) -> tuple[int, Side, bytes]:
    biased, side, size = _HEAD.unpack_from(prefix)
    return biased - _BIAS, SIDES[side], prefix[_HEAD.size : _HEAD.size + size]


def _size(entry: bytes, stored: bytes, memo: Any) -> int:
    size = 2 * len(entry) + len(stored) + ENTRY_OVERHEAD_BYTES
    return size if memo is None else size + len(stored)


class PendingNonMatches:
    """Unmatched records of the sides whose non-matches are emitted, oldest first."""

    def __init__(self, store: KeyValueStore) -> None:
        self._store = store
        self._held = store.index_memory
        self._held.release()  # the store's index of an earlier run of the task is gone
        self._entries: dict[bytes, list[Held]] = {}
        """prefix -> (store key, stored value, memo) of its pending records, in offset order."""
        self._due: tuple[list[Due], list[Due]] = ([], [])
        """Per side, a (timestamp, prefix, side, key) heap; prefixes already matched are skipped
        when popped (side and key ride along so that popping need not parse the prefix)."""
        self._horizon: list[int | None] = [None, None]
        """Per side: None while every pending entry of the side is in memory; else exactly the
        entries below it are, and those at or above it may be in the store only."""
        self._stored_until = [-_BIAS, -_BIAS]
        """Per side, while it has a horizon: no entry in the store only is later than this."""
        self._span = [_FIRST_SPAN_MS, _FIRST_SPAN_MS]
        self._load()

    def _load(self) -> None:
        """Index the oldest entries of each side, as many as the budget takes."""
        loaded = [0, 0]
        last: list[int | None] = [None, None]
        for entry, stored in self._store.range():
            prefix = entry[: -_OFFSET.size]
            timestamp, side, key = _parse(prefix)
            if self._horizon[side] is None:
                if not self._full(loaded[side], timestamp, last[side]):
                    self._index((timestamp, prefix, side, key), entry, stored, None)
                    loaded[side] += 1
                    last[side] = timestamp
                    continue
                self._horizon[side] = timestamp
            self._stored_until[side] = timestamp  # the store is in timestamp order

    def _full(self, loaded: int, timestamp: int, last: int | None) -> bool:
        """Whether to stop loading before an entry at `timestamp`: never inside one timestamp
        (the horizon lies between timestamps), nor before `_RELOAD_LEAST_ENTRIES`."""
        return (
            timestamp != last
            and loaded >= _RELOAD_LEAST_ENTRIES
            and (loaded >= _RELOAD_MOST_ENTRIES or self._held.budget.over)
        )

    def _index(self, due: Due, entry: bytes, stored: bytes, memo: Any) -> None:
        """Hold `entry` under its prefix."""
        prefix = due[1]
        entries = self._entries.get(prefix)
        held = (entry, stored, memo)
        if entries is None:
            self._entries[prefix] = [held]
            heapq.heappush(self._due[due[2]], due)
        elif entry > entries[-1][0]:
            entries.append(held)
        else:  # a replay: a lower offset comes after a higher one
            at = bisect.bisect_left(entries, entry, key=_entry_key)
            if entries[at][0] == entry:
                return
            entries.insert(at, held)
        self._held.add(_size(entry, stored, memo))

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
        """Hold a record; `memo` comes back with it from `pop_until` (None after a restart or
        once the record has waited in the store only)."""
        prefix = _prefix(timestamp, side, key)
        entry = prefix + _OFFSET.pack(offset)
        self._store.put(entry, stored, timestamp)
        horizon = self._horizon[side]
        if horizon is not None and timestamp >= horizon:
            self._stored_until[side] = max(self._stored_until[side], timestamp)
            return
        self._index((timestamp, prefix, side, key), entry, stored, memo)
        if self._held.budget.over:
            self._spill(side)

    def discard(self, timestamp: int, side: Side, key: bytes, offset: int) -> None:
        """Forget the pending record of `side` at `offset` with this key and timestamp: it has
        matched (so have all others of that key and timestamp, which the caller names next)."""
        prefix = _prefix(timestamp, side, key)
        horizon = self._horizon[side]
        if horizon is not None and timestamp >= horizon:
            self._store.delete(prefix + _OFFSET.pack(offset), timestamp)
            return
        entries = self._entries.pop(prefix, None)
        if entries is None:
            return
        for entry, stored, memo in entries:
            self._store.delete(entry, timestamp)
            self._held.remove(_size(entry, stored, memo))

    def any_before(self, side: Side, timestamp: int) -> bool:
        """Whether `pop_until(side, timestamp)` may yield anything (cheap)."""
        due = self._due[side]
        if due and due[0][0] < timestamp:
            return True
        horizon = self._horizon[side]
        return horizon is not None and horizon < timestamp

    def pop_until(self, side: Side, timestamp: int) -> list[tuple[int, Side, bytes, bytes, Any]]:
        """Remove and return (timestamp, side, key, stored value, memo) of the side's entries
        older than `timestamp`, oldest first (a list: compiled, a generator costs more per
        entry)."""
        due, popped, held = self._due[side], [], self._held
        while True:
            horizon = self._horizon[side]
            until = timestamp if horizon is None or timestamp <= horizon else horizon
            while due and due[0][0] < until:
                ts, prefix, _, key = heapq.heappop(due)
                entries = self._entries.pop(prefix, None)
                if entries is None:
                    continue
                for entry, stored, memo in entries:
                    popped.append((ts, side, key, stored, memo))
                    self._store.delete(entry, ts)
                    held.remove(_size(entry, stored, memo))
            if until == timestamp:
                return popped
            self._reload(side, until)

    def _reload(self, side: Side, horizon: int) -> None:
        """Bring the side's next entries from the store into memory (none of it is there)."""
        stored_until = self._stored_until[side]
        span = self._span[side]
        end = min(horizon + span, stored_until + 1)
        loaded, last, stop = 0, None, None
        for entry, stored in self._store.range(_time(horizon), _time(end)):
            prefix = entry[: -_OFFSET.size]
            timestamp, of, key = _parse(prefix)
            if of != side:
                continue
            if self._full(loaded, timestamp, last):
                stop = timestamp
                break
            self._index((timestamp, prefix, side, key), entry, stored, None)
            loaded += 1
            last = timestamp
        if stop is not None:
            self._horizon[side] = stop
            self._span[side] = max(1, span // 2)
            return
        self._horizon[side] = None if end > stored_until else end
        if loaded < _RELOAD_MOST_ENTRIES // 4:
            self._span[side] = span * 2

    def _spill(self, side: Side) -> None:
        """Let go of the side's newest entries, whole timestamps at a time, until the budget
        is back under three quarters or the side holds nothing; they stay in the store."""
        due, held = self._due[side], self._held
        budget = held.budget
        floor = budget.max_bytes * 3 // 4
        newest = sorted(due, reverse=True)
        cut, at = None, 0
        while at < len(newest) and budget.used_bytes > floor:
            timestamp = newest[at][0]
            while at < len(newest) and newest[at][0] == timestamp:
                for entry, stored, memo in self._entries.pop(newest[at][1], ()):
                    held.remove(_size(entry, stored, memo))
                at += 1
            cut = timestamp
        if cut is None:
            return
        due[:] = newest[at:]
        heapq.heapify(due)
        self._horizon[side] = cut
        self._stored_until[side] = max(self._stored_until[side], newest[0][0])
