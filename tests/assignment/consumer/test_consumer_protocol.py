"""Kafka's consumer protocol Subscription and Assignment, versions 0-3, and newer ones."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.consumer_protocol import (
    LATEST_VERSION,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from streamjoin.assignment.model import NO_GENERATION, Assignment, Subscription, TopicPartition
from streamjoin.assignment.wire import Writer
from streamjoin.errors import ProtocolDecodeError

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
partitions = st.lists(
    st.builds(TopicPartition, names, st.integers(0, 2**31 - 1)), unique=True, max_size=8
)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(names, unique=True, max_size=5).map(lambda t: tuple(sorted(t))),
    user_data=st.binary(max_size=32),
    owned_partitions=partitions.map(lambda ps: tuple(sorted(ps))),
    generation=st.integers(-1, 2**31 - 1),
    rack=st.none() | names,
)
assignments = st.builds(
    Assignment,
    partitions=partitions.map(lambda ps: tuple(sorted(ps))),
    user_data=st.binary(max_size=32),
)
versions = st.integers(0, LATEST_VERSION)


def as_of(subscription: Subscription, version: int) -> Subscription:
    """What survives encoding at `version`: later fields fall back to their defaults."""
    return Subscription(
        subscription.topics,
        subscription.user_data,
        subscription.owned_partitions if version >= 1 else (),
        subscription.generation if version >= 2 else NO_GENERATION,
        subscription.rack if version >= 3 else None,
    )


def normalized(subscription: Subscription) -> Subscription:
    return Subscription(
        subscription.topics,
        subscription.user_data,
        tuple(sorted(subscription.owned_partitions)),
        subscription.generation,
        subscription.rack,
    )


@given(subscriptions, versions)
def test_subscriptions_round_trip_in_every_version(
    subscription: Subscription, version: int
) -> None:
    encoded = encode_subscription(subscription, version)
    assert encoded[:2] == version.to_bytes(2, "big")
    assert normalized(decode_subscription(encoded)) == as_of(subscription, version)


@given(assignments, versions)
def test_assignments_round_trip_in_every_version(assignment: Assignment, version: int) -> None:
    decoded = decode_assignment(encode_assignment(assignment, version))
    assert tuple(sorted(decoded.partitions)) == assignment.partitions
    assert decoded.user_data == assignment.user_data


@given(subscriptions, st.integers(LATEST_VERSION + 1, 2**15 - 1), st.binary(max_size=16))
def test_a_newer_subscription_is_read_as_the_latest_known_version(
    subscription: Subscription, version: int, extra: bytes
) -> None:
    latest = encode_subscription(subscription, LATEST_VERSION)
    newer = Writer().int16(version).getvalue() + latest[2:] + extra
    assert normalized(decode_subscription(newer)) == subscription


@given(assignments, st.integers(LATEST_VERSION + 1, 2**15 - 1), st.binary(max_size=16))
def test_a_newer_assignment_is_read_for_its_common_fields(
    assignment: Assignment, version: int, extra: bytes
) -> None:
    newer = Writer().int16(version).getvalue() + encode_assignment(assignment)[2:] + extra
    assert tuple(sorted(decode_assignment(newer).partitions)) == assignment.partitions


@given(subscriptions, versions, st.data())
def test_truncated_subscriptions_raise_protocol_decode_errors(
    subscription: Subscription, version: int, data: st.DataObject
) -> None:
    encoded = encode_subscription(subscription, version)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(ProtocolDecodeError, match="consumer protocol subscription"):
        decode_subscription(encoded[:cut])


@given(assignments, st.data())
def test_truncated_assignments_raise_protocol_decode_errors(
    assignment: Assignment, data: st.DataObject
) -> None:
    encoded = encode_assignment(assignment)
    cut = data.draw(st.integers(1, len(encoded) - 1))
    with pytest.raises(ProtocolDecodeError, match="consumer protocol assignment"):
        decode_assignment(encoded[:cut])


def test_an_empty_assignment_buffer_is_an_empty_assignment() -> None:
    """What the broker sends a member the leader left out."""
    assert decode_assignment(b"") == Assignment(())


def test_negative_versions_are_refused() -> None:
    with pytest.raises(ProtocolDecodeError, match="negative version -1"):
        decode_subscription(b"\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff")
    with pytest.raises(ValueError, match="version 4 is not 0-3"):
        encode_subscription(Subscription(("t",)), 4)


def test_a_null_user_data_reads_as_empty() -> None:
    encoded = Writer().int16(0).array(["t"], Writer.string).nullable_bytes(None).getvalue()
    assert decode_subscription(encoded) == Subscription(("t",))


def test_the_wire_format_matches_kafkas_byte_for_byte() -> None:
    """A v1 subscription as Apache Kafka's ConsumerProtocol writes it."""
    subscription = Subscription(("t",), b"u", (TopicPartition("t", 3),))
    expected = (
        b"\x00\x01"  # version
        + b"\x00\x00\x00\x01"
        + b"\x00\x01t"  # topics
        + b"\x00\x00\x00\x01u"  # user data
        + b"\x00\x00\x00\x01"
        + b"\x00\x01t"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x03"  # owned
    )
    assert encode_subscription(subscription, 1) == expected
