"""`sticky`: KIP-54's examples, KIP-341's generations, user data, member state."""

from __future__ import annotations

import logging

import pytest
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyAssignorUserDataV1

from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.consumer.sticky.user_data import (
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    Subscription,
    TopicPartition,
)
from streamjoin.errors import ProtocolDecodeError


def tps(text: str) -> tuple[TopicPartition, ...]:
    """'t0p0 t1p1' -> the partitions, in canonical order."""
    pairs = (item.split("p") for item in text.split())
    return tuple(sorted(TopicPartition(t, int(p)) for t, p in pairs))


def table(result: GroupAssignment) -> dict[str, tuple[TopicPartition, ...]]:
    return {member: a.partitions for member, a in result.items()}


def rejoin(result: GroupAssignment, members: dict[str, tuple[str, ...]], generation: int = 1):
    """Members that were in `result` report what they got (via user data, as EAGER members do)."""
    return {
        m: Subscription(
            topics,
            encode_sticky_user_data(result[m].partitions, generation) if m in result else b"",
        )
        for m, topics in members.items()
    }


def test_example_1_a_member_leaves_and_five_assignments_are_preserved() -> None:
    topics = {f"t{i}": 2 for i in range(4)}
    everyone = tuple(topics)
    first = StickyAssignor().assign(topics, {c: Subscription(everyone) for c in ("C0", "C1", "C2")})
    assert table(first) == {
        "C0": tps("t0p0 t1p1 t3p0"),
        "C1": tps("t0p1 t2p0 t3p1"),
        "C2": tps("t1p0 t2p1"),
    }
    second = StickyAssignor().assign(topics, rejoin(first, {"C0": everyone, "C2": everyone}))
    assert table(second) == {"C0": tps("t0p0 t1p1 t3p0 t2p0"), "C2": tps("t1p0 t2p1 t0p1 t3p1")}
    preserved = sum(len(set(first[m].partitions) & set(second[m].partitions)) for m in second)
    assert preserved == 5


def test_example_2_heterogeneous_subscriptions() -> None:
    topics = {"t0": 1, "t1": 2, "t2": 3}
    members = {"C0": ("t0",), "C1": ("t0", "t1"), "C2": ("t0", "t1", "t2")}
    first = StickyAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    assert table(first) == {"C0": tps("t0p0"), "C1": tps("t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}
    del members["C0"]
    second = StickyAssignor().assign(topics, rejoin(first, members))
    assert table(second) == {"C1": tps("t1p0 t1p1 t0p0"), "C2": tps("t2p0 t2p1 t2p2")}


def test_example_3_a_member_joins_and_three_assignments_are_preserved() -> None:
    topics = {"t0": 2, "t1": 2}
    both = ("t0", "t1")
    first = StickyAssignor().assign(topics, {c: Subscription(both) for c in ("C0", "C1")})
    assert table(first) == {"C0": tps("t0p0 t1p0"), "C1": tps("t0p1 t1p1")}
    second = StickyAssignor().assign(topics, rejoin(first, dict.fromkeys(("C0", "C1", "C2"), both)))
    assert table(second) == {"C0": tps("t0p0 t1p0"), "C1": tps("t0p1"), "C2": tps("t1p1")}


def test_the_claim_of_the_higher_generation_wins() -> None:
    """KIP-341: C0 missed a rebalance and still claims t0p0 and t0p1, which C1 got later."""
    topics = {"t0": 4}
    subscriptions = {
        "C0": Subscription(("t0",), encode_sticky_user_data(tps("t0p0 t0p1"), 3)),
        "C1": Subscription(("t0",), encode_sticky_user_data(tps("t0p0 t0p1 t0p2"), 4)),
    }
    result = StickyAssignor().assign(topics, subscriptions)
    assert set(tps("t0p0 t0p1")) <= set(result["C1"].partitions)


def test_owned_partitions_in_the_subscription_take_precedence_over_user_data() -> None:
    topics = {"t0": 2}
    stale = encode_sticky_user_data(tps("t0p0 t0p1"), 1)
    subscriptions = {
        "C0": Subscription(("t0",), stale, owned_partitions=tps("t0p1"), generation=2),
        "C1": Subscription(("t0",), owned_partitions=tps("t0p0"), generation=2),
    }
    assert table(StickyAssignor().assign(topics, subscriptions)) == {
        "C0": tps("t0p1"),
        "C1": tps("t0p0"),
    }


def test_unreadable_user_data_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    subscriptions = {"C0": Subscription(("t0",), b"\x00\x00\x00\x05garbage")}
    with caplog.at_level(logging.WARNING):
        result = StickyAssignor().assign({"t0": 2}, subscriptions)
    assert table(result) == {"C0": tps("t0p0 t0p1")}
    assert "ignoring a member's previous assignment" in caplog.text


def test_topics_that_do_not_exist_are_not_assigned() -> None:
    result = StickyAssignor().assign(
        {"t0": 2, "empty": 0}, {"C0": Subscription(("t0", "missing", "empty"))}
    )
    assert table(result) == {"C0": tps("t0p0 t0p1")}


def test_a_member_carries_its_assignment_and_generation_into_its_next_subscription() -> None:
    member = StickyAssignor()
    assert member.subscription_user_data(["t0"]) == b""
    member.on_assignment(Assignment(tps("t0p3 t1p0")), generation=7)
    data = decode_sticky_user_data(member.subscription_user_data(["t0", "t1"]))
    assert data.partitions_by_topic == {"t0": [3], "t1": [0]}
    assert data.generation == 7


def test_user_data_is_byte_compatible_with_kafka_clients() -> None:
    """aiokafka's StickyAssignorUserDataV1 is Kafka's v1 layout; each side reads the other's."""
    ours = encode_sticky_user_data(tps("t1p2 t0p0 t0p1"), 5)
    theirs = StickyAssignorUserDataV1.decode(ours)
    assert sorted((t, sorted(ps)) for t, ps in theirs.previous_assignment) == [
        ("t0", [0, 1]),
        ("t1", [2]),
    ]
    assert theirs.generation == 5
    encoded = StickyAssignorUserDataV1([("t0", [0, 1]), ("t1", [2])], 9).encode()
    assert encoded == encode_sticky_user_data(tps("t0p0 t0p1 t1p2"), 9)
    decoded = decode_sticky_user_data(encoded)
    assert decoded.partitions_by_topic == {"t0": [0, 1], "t1": [2]}
    assert decoded.generation == 9


def test_v0_user_data_has_no_generation() -> None:
    v1 = encode_sticky_user_data(tps("t0p0"), 3)
    v0 = v1[:-4]
    assert decode_sticky_user_data(v0).generation == NO_GENERATION
    assert decode_sticky_user_data(v0).partitions_by_topic == {"t0": [0]}
    with pytest.raises(ProtocolDecodeError, match="sticky assignor user data"):
        decode_sticky_user_data(v1[:7])
