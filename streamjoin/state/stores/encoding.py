"""Byte layouts of window store keys, chosen so that RocksDB's key order does the work.

Changelog key:              varint(len(key)) | key | timestamp(8) | sequence(4)
Local key:     segment(8) | changelog key

Integers are big-endian and signed ones are biased by 2**63, so byte order equals numeric order.
The length prefix makes `segment | varint | key` prefix-free: a range scan for one key never
meets another key's records, and within it records come in (timestamp, sequence) order. The
sequence number keeps duplicates (same key and timestamp) apart. The segment comes first so that
dropping every segment older than a cutoff is one range delete; it is left out of the changelog
key because it depends on the store's segment interval, so a restore prepends it.
"""

from __future__ import annotations

import struct

from streamjoin.errors import ProtocolDecodeError

__all__ = (
    "META_KEY",
    "NO_TIME",
    "SEQUENCE_MODULUS",
    "WINDOW_SUFFIX_SIZE",
    "decode_meta",
    "encode_meta",
    "encode_ts",
    "encode_varint",
    "key_prefix",
    "local_key",
    "segment_prefix",
    "split_changelog_key",
    "window_changelog_key",
)

_BIAS = 1 << 63
_U64 = struct.Struct(">Q")
_SUFFIX = struct.Struct(">QI")
_META = struct.Struct(">QI")

_ONE_BYTE_VARINTS = tuple(bytes((value,)) for value in range(0x80))

SEQUENCE_MODULUS = 1 << 32
WINDOW_SUFFIX_SIZE = _SUFFIX.size
NO_TIME = -_BIAS
"""Stream time of a store that has seen no record."""

META_KEY = b""
"""Window store metadata (stream time, next sequence); shorter than any record key."""


def encode_ts(value: int) -> bytes:
    """A signed 64-bit integer as 8 bytes that sort like the numbers."""
    return _U64.pack(value + _BIAS)


def encode_varint(value: int) -> bytes:
    """Unsigned LEB128: one byte below 128, self-delimiting, so `varint | key` is prefix-free."""
    if value < 0x80:
        return _ONE_BYTE_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def segment_prefix(segment: int) -> bytes:
    return _U64.pack(segment + _BIAS)


def key_prefix(segment: int, key: bytes) -> bytes:
    """Common prefix of all of `key`'s records in `segment`."""
    return _U64.pack(segment + _BIAS) + encode_varint(len(key)) + key


def window_changelog_key(key: bytes, timestamp: int, sequence: int) -> bytes:
    return encode_varint(len(key)) + key + _SUFFIX.pack(timestamp + _BIAS, sequence)


def split_changelog_key(data: bytes) -> tuple[bytes, int, int]:
    """(key, timestamp, sequence) of a window changelog key."""
    size, start = _decode_varint(data)
    if len(data) != start + size + WINDOW_SUFFIX_SIZE:
        raise ProtocolDecodeError(
            f"window changelog key of {len(data)} bytes does not hold a {size}-byte key and "
            f"its {WINDOW_SUFFIX_SIZE}-byte timestamp and sequence"
        )
    biased, sequence = _SUFFIX.unpack_from(data, start + size)
    return data[start : start + size], int(biased) - _BIAS, int(sequence)


def _decode_varint(data: bytes) -> tuple[int, int]:
    """The varint at the start of `data` and the offset just past it."""
    value = shift = 0
    for index, byte in enumerate(data[:10]):
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    raise ProtocolDecodeError(f"window changelog key {data[:16]!r} starts with no valid length")


def local_key(segment: int, changelog_key: bytes) -> bytes:
    """The local key of a record, from its segment and its changelog key."""
    return _U64.pack(segment + _BIAS) + changelog_key


def encode_meta(stream_time: int, next_sequence: int) -> bytes:
    return _META.pack(stream_time + _BIAS, next_sequence)


def decode_meta(data: bytes) -> tuple[int, int]:
    """(stream time, next sequence) from the metadata value."""
    if len(data) != _META.size:
        raise ProtocolDecodeError(
            f"window store metadata has {len(data)} bytes, expected {_META.size}"
        )
    biased, sequence = _META.unpack(data)
    return int(biased) - _BIAS, int(sequence)
