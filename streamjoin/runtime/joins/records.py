"""The records a join processor takes in and gives out, and how stored values remember their
source offset (so outputs can name both sources, and a replayed duplicate is recognised).

They are plain classes with slots, final and fully typed: compiled (setup.py), mypyc makes them
native, built and read without a Python call (several are made per input record; as Python, a
named tuple was about twice as fast to build as a frozen dataclass).
"""

from __future__ import annotations

import enum
import struct
from typing import Any, final

__all__ = (
    "SIDES",
    "JoinOutput",
    "Joined",
    "Side",
    "SourceRecord",
    "join_output",
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


@final
class SourceRecord:
    """One input record of a task, value still serialised."""

    __slots__ = ("key", "offset", "side", "timestamp", "value")

    def __init__(
        self, side: Side, key: bytes | None, value: bytes | None, timestamp: int, offset: int
    ) -> None:
        self.side = side
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.offset = offset

    def __repr__(self) -> str:
        return f"SourceRecord({self.side.name}, {self.key!r}, t={self.timestamp}, @{self.offset})"


@final
class Joined:
    """One side's record in a join result: decoded value, its bytes and its source offset;
    `partition` is the source partition where it is not the task's (a global table's), else
    -1."""

    __slots__ = ("offset", "partition", "raw", "value")

    def __init__(self, value: Any, raw: bytes, offset: int, partition: int = -1) -> None:
        self.value = value
        self.raw = raw
        self.offset = offset
        self.partition = partition

    def __repr__(self) -> str:
        return f"Joined({self.value!r}, @{self.offset})"


@final
class JoinOutput:
    """A join result before the user's joiner runs; a side is None for a non-match."""

    __slots__ = ("key", "left", "right", "timestamp")

    def __init__(
        self, key: bytes | None, left: Joined | None, right: Joined | None, timestamp: int
    ) -> None:
        self.key = key
        self.left = left
        self.right = right
        self.timestamp = timestamp

    def __repr__(self) -> str:
        return f"JoinOutput({self.key!r}, {self.left!r}, {self.right!r}, t={self.timestamp})"


def join_output(
    side: Side, key: bytes | None, this: Joined, other: Joined | None, timestamp: int
) -> JoinOutput:
    """`this` (from `side`) and `other` put in left, right order."""
    if side is Side.LEFT:
        return JoinOutput(key, this, other, timestamp)
    return JoinOutput(key, other, this, timestamp)


def pack_stored(offset: int, value: bytes) -> bytes:
    """A store value: the source offset, then the serialised record value."""
    return _OFFSET.pack(offset) + value


def unpack_stored(stored: bytes) -> tuple[int, bytes]:
    return _OFFSET.unpack_from(stored)[0], stored[_OFFSET.size :]
