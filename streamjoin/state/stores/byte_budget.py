"""Byte counts of the in-memory indexes beside the stores (a window store's newest records, a
join's pending non-matches), against the part of the worker's budget they share.

RocksDB counts its own memory; these indexes are Python objects, so each counts its estimated
bytes in and out as it holds and lets go of entries. Compiled with the stores: the counts
change on every record.
"""

from __future__ import annotations

__all__ = ("ByteBudget", "HeldBytes")


class ByteBudget:
    """Bytes that the indexes sharing it may take together."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used_bytes = 0

    @property
    def over(self) -> bool:
        return self.used_bytes > self.max_bytes


class HeldBytes:
    """One index's part of a budget, given back whole when the index goes."""

    def __init__(self, budget: ByteBudget) -> None:
        self.budget = budget
        self.bytes = 0

    def add(self, size: int) -> None:
        self.bytes += size
        self.budget.used_bytes += size

    def remove(self, size: int) -> None:
        self.bytes -= size
        self.budget.used_bytes -= size

    def release(self) -> None:
        self.budget.used_bytes -= self.bytes
        self.bytes = 0
