"""Big-endian primitives of the Kafka protocol, for the codecs of group metadata and user data.

Struct-based and allocation-light: the leader decodes every member's metadata on each rebalance.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from streamjoin.errors import ProtocolDecodeError

__all__ = ("Reader", "Writer")

_T = TypeVar("_T")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Writer:
    """Appends Kafka protocol primitives to a growing buffer."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, value: int) -> Writer:
        self._parts.append(_I16.pack(value))
        return self

    def int32(self, value: int) -> Writer:
        self._parts.append(_I32.pack(value))
        return self

    def int64(self, value: int) -> Writer:
        self._parts.append(_I64.pack(value))
        return self

    def string(self, value: str) -> Writer:
        raw = value.encode()
        self._parts.append(_I16.pack(len(raw)))
        self._parts.append(raw)
        return self

    def nullable_string(self, value: str | None) -> Writer:
        if value is None:
            return self.int16(-1)
        return self.string(value)

    def nullable_bytes(self, value: bytes | None) -> Writer:
        if value is None:
            return self.int32(-1)
        self._parts.append(_I32.pack(len(value)))
        self._parts.append(value)
        return self

    def int32_array(self, values: Sequence[int]) -> Writer:
        """An array of int32 in one struct call: partition lists can hold 100,000 entries."""
        self._parts.append(_I32.pack(len(values)))
        self._parts.append(struct.pack(f">{len(values)}i", *values))
        return self

    def array(self, items: Iterable[_T], write_item: Callable[[Writer, _T], object]) -> Writer:
        values = list(items)
        self.int32(len(values))
        for item in values:
            write_item(self, item)
        return self

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


class Reader:
    """Reads Kafka protocol primitives; a short read raises ProtocolDecodeError naming `what`."""

    __slots__ = ("_data", "_pos", "_what")

    def __init__(self, data: bytes, what: str) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._what = what

    def _take(self, size: int) -> memoryview:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise ProtocolDecodeError(
                f"{self._what}: truncated at byte {self._pos} (wanted {size} more bytes, "
                f"{len(self._data) - self._pos} left)"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def int16(self) -> int:
        value: int = _I16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack(self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _I64.unpack(self._take(8))[0]
        return value

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        try:
            return bytes(self._take(size)).decode()
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(f"{self._what}: string is not UTF-8 ({exc})") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ProtocolDecodeError(f"{self._what}: null where a string is required")
        return value

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        if size == -1:
            return None
        return bytes(self._take(size))

    def int32_array(self) -> list[int]:
        """An array of int32 (a null array reads as empty) in one struct call."""
        count = self.int32()
        if count == -1:
            return []
        if count < 0 or 4 * count > self.remaining():
            raise ProtocolDecodeError(f"{self._what}: impossible array length {count}")
        return list(struct.unpack(f">{count}i", self._take(4 * count)))

    def array(self, read_item: Callable[[Reader], _T]) -> list[_T]:
        count = self.int32()
        if count == -1:
            return []
        if count < 0 or count > self.remaining():
            raise ProtocolDecodeError(f"{self._what}: impossible array length {count}")
        return [read_item(self) for _ in range(count)]
