"""The value a table store keeps per key: the source record's offset and timestamp, then its
value bytes. A table store restored from its own source topic builds the same value from each
record it reads, so a join finds the same thing whether the store was written or restored."""

from __future__ import annotations

import struct

__all__ = ("pack_table_value", "unpack_table_value")

_HEAD = struct.Struct(">qq")


def pack_table_value(offset: int, timestamp: int, value: bytes) -> bytes:
    return _HEAD.pack(offset, timestamp) + value


def unpack_table_value(stored: bytes) -> tuple[int, int, bytes]:
    """(source offset, source timestamp, value bytes)."""
    offset, timestamp = _HEAD.unpack_from(stored)
    return offset, timestamp, stored[_HEAD.size :]
