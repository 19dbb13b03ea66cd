"""Request versions exactly-once needs that aiokafka (0.14) lacks, from Kafka's protocol spec.

- TxnOffsetCommit v3 (KIP-447): the offsets of a transaction carry the consumer group member's
  generation, member id and instance id, so the group coordinator refuses them from a member
  that has lost its partitions (aiokafka sends v0, which carries none of them).
- OffsetFetch v7 with `require_stable`: the coordinator answers UNSTABLE_OFFSET_COMMIT while a
  transaction holding offsets for the partition is still open, so a new owner never starts from
  offsets that an open transaction is about to move.

Both are flexible versions (compact strings and arrays, tagged fields).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

__all__ = ("OffsetFetchStableRequest", "TxnOffsetCommitV3Request")

_NO_LEADER_EPOCH = -1
_STRING = CompactString("utf-8")
_TAGS = ("tags", TaggedFields)


def _topics(*partition_fields: tuple[str, object]) -> tuple[str, CompactArray]:
    """A flexible version's topics array: each topic's name, then its partitions (these
    fields), each level closed by its tagged fields."""
    return (
        "topics",
        CompactArray(
            ("name", _STRING), ("partitions", CompactArray(*partition_fields, _TAGS)), _TAGS
        ),
    )


class TxnOffsetCommitResponseV3(Response):  # type: ignore[misc]
    API_KEY = 28
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        _topics(("partition_index", Int32), ("error_code", Int16)),
        _TAGS,
    )


class TxnOffsetCommitRequestV3(RequestStruct):  # type: ignore[misc]
    FLEXIBLE_VERSION = True
    API_KEY = 28
    API_VERSION = 3
    RESPONSE_TYPE = TxnOffsetCommitResponseV3
    SCHEMA = Schema(
        ("transactional_id", _STRING),
        ("group_id", _STRING),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("generation_id", Int32),
        ("member_id", _STRING),
        ("group_instance_id", _STRING),
        _topics(
            ("partition_index", Int32),
            ("committed_offset", Int64),
            ("committed_leader_epoch", Int32),
            ("committed_metadata", _STRING),
        ),
        _TAGS,
    )


TxnOffsetCommitStruct: TypeAlias = TxnOffsetCommitRequestV3


class TxnOffsetCommitV3Request(Request[TxnOffsetCommitStruct]):  # type: ignore[misc]
    """TxnOffsetCommit with the member's identity; only v3 is offered (a broker without it
    cannot fence zombie members, and exactly-once is refused on it)."""

    API_KEY = 28

    def __init__(
        self,
        *,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: Mapping[str, Sequence[tuple[int, int]]],
    ) -> None:
        """`offsets`: topic -> (partition, next offset to read) pairs."""
        self._fields = (
            transactional_id,
            group_id,
            producer_id,
            producer_epoch,
            generation_id,
            member_id,
            group_instance_id,
        )
        self._topics: list[
            tuple[str, list[tuple[int, int, int, str, dict[int, bytes]]], dict[int, bytes]]
        ] = [
            (topic, [(p, o, _NO_LEADER_EPOCH, "", {}) for p, o in sorted(rows)], {})
            for topic, rows in sorted(offsets.items())
        ]

    def build(self, request_struct_class: type[TxnOffsetCommitStruct]) -> TxnOffsetCommitStruct:
        return request_struct_class(*self._fields, self._topics, {})


class OffsetFetchResponseV7(Response):  # type: ignore[misc]
    API_KEY = 9
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        _topics(
            ("partition_index", Int32),
            ("committed_offset", Int64),
            ("committed_leader_epoch", Int32),
            ("metadata", _STRING),
            ("error_code", Int16),
        ),
        ("error_code", Int16),
        _TAGS,
    )


class OffsetFetchRequestV7(RequestStruct):  # type: ignore[misc]
    FLEXIBLE_VERSION = True
    API_KEY = 9
    API_VERSION = 7
    RESPONSE_TYPE = OffsetFetchResponseV7
    SCHEMA = Schema(
        ("group_id", _STRING),
        (
            "topics",
            CompactArray(("name", _STRING), ("partition_indexes", CompactArray(Int32)), _TAGS),
        ),
        ("require_stable", Boolean),
        _TAGS,
    )


OffsetFetchStruct: TypeAlias = OffsetFetchRequestV7


class OffsetFetchStableRequest(Request[OffsetFetchStruct]):  # type: ignore[misc]
    """OffsetFetch v7 with require_stable set."""

    API_KEY = 9

    def __init__(self, group_id: str, topics: Mapping[str, Sequence[int]]) -> None:
        self._group_id = group_id
        self._topics: list[tuple[str, list[int], dict[int, bytes]]] = [
            (t, sorted(ps), {}) for t, ps in sorted(topics.items())
        ]

    def build(self, request_struct_class: type[OffsetFetchStruct]) -> OffsetFetchStruct:
        return request_struct_class(self._group_id, self._topics, True, {})
