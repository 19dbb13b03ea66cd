"""Kafka's default partitioner for keyed records, cheap enough to run once per output record.

A keyed record must land where a Java producer would put it (Kafka Streams and other clients
join on that), so the hash is Kafka's `Utils.murmur2`, bit for bit. aiokafka's version reads the
key a byte at a time and masks after every step; this one unpacks whole 4-byte words with a
cached `struct.Struct` and, for longer keys, mixes all words at once in one big integer that
holds each word in its own 64-bit lane (a 32-bit word times the 31-bit constant never carries
into the next lane), leaving only the word-by-word chain into the hash state to a Python loop.
That is roughly 2-3x faster than aiokafka's.
"""

from __future__ import annotations

from collections.abc import Callable
from struct import Struct
from typing import Any, NamedTuple

__all__ = ("murmur2", "partition_for_key")

_SEED = 0x9747B28C
_MULTIPLIER = 0x5BD1E995
_LANE_MIN_WORDS = 5
"""Keys with fewer whole words are mixed word by word: the lane set-up costs more than it saves."""


class _WordCodec(NamedTuple):
    """Everything needed to hash the whole words of a key with a given number of them."""

    words: Callable[[bytes], tuple[Any, ...]]
    to_lanes: Callable[..., bytes]
    from_lanes: Callable[[bytes], tuple[Any, ...]]
    lanes_size: int
    lane_mask: int


_codecs: dict[int, _WordCodec] = {}


def _codec(word_count: int) -> _WordCodec:
    lanes = Struct("<" + "I4x" * word_count)
    codec = _codecs[word_count] = _WordCodec(
        words=Struct(f"<{word_count}I").unpack_from,
        to_lanes=lanes.pack,
        from_lanes=lanes.unpack,
        lanes_size=lanes.size,
        lane_mask=int.from_bytes(b"\xff\xff\xff\xff\0\0\0\0" * word_count, "little"),
    )
    return codec


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` of `data` as an unsigned 32-bit int (aiokafka's convention).

    Java's signed result is this value minus 2**32 when it is 2**31 or more.
    """
    length = len(data)
    word_count = length >> 2
    m = _MULTIPLIER
    h = _SEED ^ length
    if word_count:
        codec = _codecs.get(word_count) or _codec(word_count)
        if word_count < _LANE_MIN_WORDS:
            for word in codec.words(data):
                k = word * m & 0xFFFFFFFF
                h = (h * m ^ (k ^ k >> 24) * m) & 0xFFFFFFFF
        else:
            mask = codec.lane_mask
            lanes = int.from_bytes(codec.to_lanes(*codec.words(data)), "little") * m & mask
            mixed = ((lanes ^ (lanes >> 24 & mask)) * m).to_bytes(codec.lanes_size, "little")
            for k in codec.from_lanes(mixed):
                h = (h * m ^ k) & 0xFFFFFFFF
    tail = length & 3
    if tail:
        h = (h ^ int.from_bytes(data[length - tail :], "little")) * m & 0xFFFFFFFF
    h ^= h >> 13
    h = h * m & 0xFFFFFFFF
    return h ^ h >> 15


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition (0 to `partitions` - 1) Kafka's default partitioner picks for `key`."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
