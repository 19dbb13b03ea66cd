"""The request versions exactly-once adds to aiokafka's, byte for byte as Kafka's protocol spec
lays them out (flexible versions: compact strings and arrays, tagged fields)."""

from __future__ import annotations

import struct

from streamjoin.kafka.txn_protocol import (
    OffsetFetchRequestV7,
    OffsetFetchResponseV7,
    OffsetFetchStableRequest,
    TxnOffsetCommitRequestV3,
    TxnOffsetCommitResponseV3,
    TxnOffsetCommitV3Request,
)


def compact(text: str | None) -> bytes:
    return b"\x00" if text is None else bytes([len(text) + 1]) + text.encode()


def test_txn_offset_commit_v3_carries_the_members_identity() -> None:
    request = TxnOffsetCommitV3Request(
        transactional_id="app-p1",
        group_id="app",
        producer_id=5,
        producer_epoch=2,
        generation_id=7,
        member_id="m-1",
        group_instance_id=None,
        offsets={"in": [(1, 42)]},
    ).build(TxnOffsetCommitRequestV3)
    assert (request.API_KEY, request.API_VERSION, request.FLEXIBLE_VERSION) == (28, 3, True)
    expected = (
        compact("app-p1")
        + compact("app")
        + struct.pack(">qhi", 5, 2, 7)
        + compact("m-1")
        + compact(None)  # no static instance id
        + b"\x02"  # one topic
        + compact("in")
        + b"\x02"  # one partition
        + struct.pack(">iqi", 1, 42, -1)  # partition, offset, no leader epoch
        + compact("")  # metadata
        + b"\x00\x00\x00"  # tagged fields: partition, topic, request
    )
    assert request.encode() == expected


def test_txn_offset_commit_v3_response_gives_each_partitions_error() -> None:
    raw = struct.pack(">i", 0) + b"\x02" + compact("in") + b"\x03"
    raw += struct.pack(">ih", 0, 0) + b"\x00" + struct.pack(">ih", 1, 22) + b"\x00"
    raw += b"\x00\x00"
    response = TxnOffsetCommitResponseV3.decode(raw)
    assert [(p, code) for _, rows, _ in response.topics for p, code, _ in rows] == [(0, 0), (1, 22)]


def test_offset_fetch_v7_requires_stable_offsets() -> None:
    request = OffsetFetchStableRequest("app", {"in": [2, 0]}).build(OffsetFetchRequestV7)
    assert (request.API_KEY, request.API_VERSION) == (9, 7)
    expected = compact("app") + b"\x02" + compact("in") + b"\x03"
    expected += struct.pack(">ii", 0, 2) + b"\x00" + b"\x01" + b"\x00"  # require_stable = true
    assert request.encode() == expected
    raw = struct.pack(">i", 0) + b"\x02" + compact("in") + b"\x02"
    raw += struct.pack(">iqi", 0, 17, -1) + compact("") + struct.pack(">h", 88) + b"\x00"
    raw += b"\x00" + struct.pack(">h", 0) + b"\x00"
    response = OffsetFetchResponseV7.decode(raw)
    assert response.topics[0][1][0][:2] == (0, 17)
    assert response.topics[0][1][0][4] == 88  # UNSTABLE_OFFSET_COMMIT
