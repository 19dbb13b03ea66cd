"""The `sticky` assignor's subscription user data, byte-compatible with Apache Kafka's.

KIP-54 put the member's current assignment into its subscription so that any new leader knows the
previous assignment; KIP-341 appended the generation of that assignment, so that the leader can
tell a stale claim from a true one:

    StickyAssignorUserData v0 => [Topic [Partition]]             Topic => string, Partition => int32
                           v1 => [Topic [Partition]] Generation  Generation => int32

There is no version field: a buffer that ends after the topic array is v0 (no generation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from streamjoin.assignment.consumer.topic_layout import group_by_topic
from streamjoin.assignment.model import NO_GENERATION, TopicPartition
from streamjoin.assignment.wire import Reader, Writer

__all__ = ("StickyUserData", "decode_sticky_user_data", "encode_sticky_user_data")


@dataclass(frozen=True, slots=True)
class StickyUserData:
    partitions_by_topic: dict[str, list[int]] = field(default_factory=dict)
    generation: int = NO_GENERATION


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """Encode as v1 (what Kafka's StickyAssignor has sent since 2.3)."""
    by_topic = group_by_topic(partitions)

    def write_topic(writer: Writer, topic: str) -> None:
        writer.string(topic).int32_array(sorted(by_topic[topic]))

    return Writer().array(sorted(by_topic), write_topic).int32(generation).getvalue()


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """Decode v0 or v1; raises ProtocolDecodeError on malformed bytes."""
    reader = Reader(data, "sticky assignor user data")
    by_topic: dict[str, list[int]] = {}
    for _ in range(reader.int32()):
        topic = reader.string()
        by_topic.setdefault(topic, []).extend(reader.int32_array())
    generation = reader.int32() if reader.remaining() >= 4 else NO_GENERATION
    return StickyUserData(by_topic, generation)
