"""The newest records of a window store, kept in memory so that a join's fetches skip RocksDB.

A join fetches the other side's records around the timestamp it has just read, and those are
nearly always among the newest the store holds. This index keeps every record put since the
store opened whose timestamp lies above `floor`: a fetch whose range lies above the floor is
answered from here alone, with no RocksDB iterator; the part of a range at or below the floor is
read from RocksDB and the unflushed writes as before. The floor starts at the store's stream
time when it opens (or finishes a restore: those records are in RocksDB only) and rises as
records leave the index, oldest put first, once they have expired or when the index outgrows
the byte budget it shares with every window store of the worker (state/memory.py): a put
over that budget evicts the putting store's oldest records, as Kafka Streams' record cache
evicts from the cache being written.

Each record may carry a memo that the caller wants back with it (the join keeps the record's
decoded value there, so a record is decoded once however often it matches).
"""

from __future__ import annotations

from collections import deque
from operator import itemgetter
from typing import Any

from streamjoin.state.stores.byte_budget import ByteBudget, HeldBytes

__all__ = ("RECORD_OVERHEAD_BYTES", "RecentRecords")

RECORD_OVERHEAD_BYTES = 450
"""What a record costs here besides its key and value bytes (object headers, tuples, list and
deque slots, and the allocator's slack as records of many stores come and go; measured: 64 MiB
of records counted at 300 took 80 MiB), an estimate for the byte budget. A memo is charged as
much again as the value: a decoded value takes about what its encoding does."""

Entry = tuple[int, bytes, Any]
"""(timestamp, value, memo)"""

_TIMESTAMP = itemgetter(0)


class RecentRecords:
    """Records by key in put order, each key's list and the put order evicted front first."""

    def __init__(self, floor: int, budget: ByteBudget) -> None:
        self.floor = floor
        """Every record put since opening with a larger timestamp is here (others may be)."""
        self._held = HeldBytes(budget)
        self._by_key: dict[bytes, list[Entry]] = {}
        self._put_order: deque[tuple[int, bytes, int]] = deque()
        """(timestamp, key, estimated size) of every record here, in put order."""

    @property
    def size_bytes(self) -> int:
        return self._held.bytes

    def __len__(self) -> int:
        return len(self._put_order)

    def add(self, key: bytes, timestamp: int, value: bytes, memo: Any) -> None:
        entries = self._by_key.get(key)
        if entries is None:
            self._by_key[key] = [(timestamp, value, memo)]
        else:
            entries.append((timestamp, value, memo))
        size = len(key) + len(value) + RECORD_OVERHEAD_BYTES
        if memo is not None:
            size += len(value)
        self._put_order.append((timestamp, key, size))
        self._held.add(size)
        budget = self._held.budget
        order = self._put_order
        while budget.used_bytes > budget.max_bytes and order:
            self._evict_oldest()

    def expire(self, cutoff: int) -> None:
        """Let go of the oldest records while their timestamps are at or below `cutoff`."""
        order = self._put_order
        while order and order[0][0] <= cutoff:
            self._evict_oldest()

    def get(self, key: bytes, low: int, high: int) -> list[Entry]:
        """`key`'s records with max(low, floor + 1) <= timestamp <= high, in time order (equal
        timestamps in put order)."""
        entries = self._by_key.get(key)
        if entries is None:
            return []
        low = max(low, self.floor + 1)
        found = [entry for entry in entries if low <= entry[0] <= high]
        if len(found) > 1:
            found.sort(key=_TIMESTAMP)  # stable: puts of one timestamp stay in order
        return found

    def reset(self, floor: int) -> None:
        """Forget everything (giving the bytes back to the budget); only records put from now
        on with timestamps above `floor` count."""
        self._by_key.clear()
        self._put_order.clear()
        self._held.release()
        self.floor = floor

    def raise_floor(self, floor: int) -> None:
        """Records up to `floor` were written around this index (a restore): stop answering
        for them."""
        self.floor = max(self.floor, floor)

    def _evict_oldest(self) -> None:
        timestamp, key, size = self._put_order.popleft()
        entries = self._by_key[key]
        if len(entries) == 1:
            del self._by_key[key]
        else:
            del entries[0]
        self._held.remove(size)
        self.floor = max(self.floor, timestamp)
