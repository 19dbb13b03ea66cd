"""The records a join processor takes in and gives out, and how stored values remember their
source offset (so outputs can name both sources, and a replayed duplicate is recognised).

They are named tuples rather than frozen dataclasses: several are made per input record, and a
tuple is built about twice as fast (0.37 vs 0.70 µs with three fields).
"""

from __future__ import annotations

import enum
import struct
from typing import Any, NamedTuple

__all__ = (
    "SIDES",
    "JoinOutput",
    "Joined",
    "Side",
    "SourceRecord",
    "pack_stored",
    "unpack_stored",
)

_OFFSET = struct.Struct(">q")


class Side(enum.IntEnum):
    LEFT = 0
    RIGHT = 1

    @property
    def other(self) -> Side:
        return Side.RIGHT if self is Side.LEFT else Side.LEFT


SIDES = (Side.LEFT, Side.RIGHT)
"""Side by index: indexing is cheaper than calling the enum, which matters per record."""


class SourceRecord(NamedTuple):
    """One input record of a task, value still serialised."""

    side: Side
    key: bytes | None
    value: bytes | None
    timestamp: int
    offset: int


class Joined(NamedTuple):
    """One side's record in a join result: decoded value, its bytes and its source offset."""

    value: Any
    raw: bytes
    offset: int


class JoinOutput(NamedTuple):
    """A join result before the user's joiner runs; a side is None for a non-match."""

    key: bytes | None
    left: Joined | None
    right: Joined | None
    timestamp: int

    @classmethod
    def of(
        cls, side: Side, key: bytes | None, this: Joined, other: Joined | None, timestamp: int
    ) -> JoinOutput:
        """`this` (from `side`) and `other` put in left, right order."""
        if side is Side.LEFT:
            return cls(key, this, other, timestamp)
        return cls(key, other, this, timestamp)


def pack_stored(offset: int, value: bytes) -> bytes:
    """A store value: the source offset, then the serialised record value."""
    return _OFFSET.pack(offset) + value


def unpack_stored(stored: bytes) -> tuple[int, bytes]:
    return _OFFSET.unpack_from(stored)[0], stored[_OFFSET.size :]
