"""User data of the `stream-join-sticky` assignor (docs/rebalancing.md), versioned.

    Subscription user data v0 => Version Epoch [Partition]   numbers the member owned, and
                                                              the epoch of that assignment
    Assignment user data v0   => Version Epoch               the epoch of this assignment

    Version => int16, Epoch => int32, Partition => int32

The epoch fences zombies: a member that missed rebalances reports an old epoch, and its claims
lose against the current owner's. A newer version is read as v0 (fields are only appended).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streamjoin.assignment.model import NO_GENERATION
from streamjoin.assignment.wire import Reader, Writer
from streamjoin.errors import ProtocolDecodeError

__all__ = (
    "StreamJoinSubscriptionData",
    "decode_stream_join_assignment",
    "decode_stream_join_subscription",
    "encode_stream_join_assignment",
    "encode_stream_join_subscription",
)

_VERSION = 0


@dataclass(frozen=True, slots=True)
class StreamJoinSubscriptionData:
    owned_numbers: tuple[int, ...] = ()
    epoch: int = NO_GENERATION


def _reader(data: bytes, what: str) -> Reader:
    reader = Reader(data, what)
    version = reader.int16()
    if version < 0:
        raise ProtocolDecodeError(f"{what}: negative version {version}")
    return reader


def encode_stream_join_subscription(owned_numbers: Sequence[int], epoch: int) -> bytes:
    return Writer().int16(_VERSION).int32(epoch).int32_array(sorted(owned_numbers)).getvalue()


def decode_stream_join_subscription(data: bytes) -> StreamJoinSubscriptionData:
    reader = _reader(data, "stream-join-sticky subscription user data")
    epoch = reader.int32()
    return StreamJoinSubscriptionData(tuple(reader.int32_array()), epoch)


def encode_stream_join_assignment(epoch: int) -> bytes:
    return Writer().int16(_VERSION).int32(epoch).getvalue()


def decode_stream_join_assignment(data: bytes) -> int:
    """The epoch of the assignment."""
    return _reader(data, "stream-join-sticky assignment user data").int32()
