"""Kafka's consumer protocol metadata: ConsumerProtocolSubscription and ConsumerProtocolAssignment.

Versions 0-3 as Apache Kafka defines them, so streamjoin members share a group with any Kafka
client that uses the same protocol name:

    Subscription v0: topics, user_data       Assignment v0+: assigned partitions, user_data
                 v1: + owned partitions
                 v2: + generation id
                 v3: + rack id

Fields are only ever appended, so a newer version is decoded by reading the fields known here and
ignoring the rest (as Kafka itself does) instead of failing the leader's rebalance.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable

from streamjoin.assignment.consumer.topic_layout import group_by_topic
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    Subscription,
    TopicPartition,
)
from streamjoin.assignment.wire import Reader, Writer
from streamjoin.errors import ProtocolDecodeError

__all__ = (
    "LATEST_VERSION",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
)

LATEST_VERSION = 3


def _write_topic(writer: Writer, item: tuple[str, list[int]]) -> None:
    writer.string(item[0]).int32_array(item[1])


def _write_topic_partitions(writer: Writer, partitions: Iterable[TopicPartition]) -> None:
    writer.array(sorted(group_by_topic(sorted(partitions)).items()), _write_topic)


def _read_topic_partitions(reader: Reader) -> tuple[TopicPartition, ...]:
    def read_one(r: Reader) -> list[TopicPartition]:
        topic = r.string()
        return [TopicPartition(topic, p) for p in r.int32_array()]

    return tuple(tp for group in reader.array(read_one) for tp in group)


def _check_version(version: int, what: str) -> None:
    if version < 0:
        raise ProtocolDecodeError(f"{what}: negative version {version}")


def encode_subscription(subscription: Subscription, version: int = LATEST_VERSION) -> bytes:
    """Encode at `version` (0-3); fields the version lacks are dropped."""
    if not 0 <= version <= LATEST_VERSION:
        raise ValueError(
            f"consumer protocol subscription version {version} is not 0-{LATEST_VERSION}"
        )
    writer = Writer().int16(version)
    writer.array(sorted(subscription.topics), Writer.string)
    writer.nullable_bytes(subscription.user_data)
    if version >= 1:
        _write_topic_partitions(writer, subscription.owned_partitions)
    if version >= 2:
        writer.int32(subscription.generation)
    if version >= 3:
        writer.nullable_string(subscription.rack)
    return writer.getvalue()


def decode_subscription(data: bytes) -> Subscription:
    """Decode any version; a version above 3 is read as 3 and its extra fields ignored."""
    what = "consumer protocol subscription"
    reader = Reader(data, what)
    version = reader.int16()
    _check_version(version, what)
    topics = tuple(reader.array(Reader.string))
    user_data = reader.nullable_bytes() or b""
    owned: tuple[TopicPartition, ...] = ()
    generation = NO_GENERATION
    rack: str | None = None
    if version >= 1:
        owned = _read_topic_partitions(reader)
    if version >= 2:
        generation = reader.int32()
    if version >= 3:
        rack = reader.nullable_string()
    return Subscription(topics, user_data, owned, generation, rack)


def encode_assignment(assignment: Assignment, version: int = LATEST_VERSION) -> bytes:
    """Encode at `version` (0-3: the fields are the same in all of them)."""
    if not 0 <= version <= LATEST_VERSION:
        raise ValueError(
            f"consumer protocol assignment version {version} is not 0-{LATEST_VERSION}"
        )
    # One struct call per member: the leader encodes every member's assignment (1,000 members
    # with 100,000 partitions at a time), and a writer call per topic took most of that time.
    grouped = assignment.by_topic()
    shape: list[tuple[int, int]] = []
    values: list[object] = [version, len(grouped)]
    for topic, partitions in grouped:
        name = _utf8(topic)
        shape.append((len(name), len(partitions)))
        values += (len(name), name, len(partitions))
        values += partitions
    user_data = assignment.user_data
    values += (len(user_data), user_data)
    return _assignment_struct(tuple(shape), len(user_data)).pack(*values)


@functools.lru_cache(maxsize=1024)
def _utf8(topic: str) -> bytes:
    return topic.encode()


@functools.lru_cache(maxsize=256)
def _assignment_struct(shape: tuple[tuple[int, int], ...], user_data: int) -> struct.Struct:
    """Version, topics (name, partition numbers) of these lengths, user data, as Writer would."""
    topics = "".join(f"h{name}si{count}i" for name, count in shape)
    return struct.Struct(f">hi{topics}i{user_data}s")


def decode_assignment(data: bytes) -> Assignment:
    """Decode any version. An empty buffer is an empty assignment (what Kafka sends a member
    the leader left out)."""
    if not data:
        return Assignment(())
    what = "consumer protocol assignment"
    reader = Reader(data, what)
    _check_version(reader.int16(), what)
    partitions = _read_topic_partitions(reader)
    user_data = reader.nullable_bytes() or b""
    return Assignment(partitions, user_data)
