"""The leader's assignment step: never fails on one member's bytes; cooperative when asked."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from streamjoin.assignment.consumer.consumer_protocol import (
    decode_assignment,
    encode_subscription,
)
from streamjoin.assignment.consumer.range import RangeAssignor
from streamjoin.assignment.consumer.registry import create_assignor
from streamjoin.assignment.model import (
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)
from streamjoin.group.coordinator import JoinedMember
from streamjoin.group.errors import GroupError
from streamjoin.group.leader import assign_members, decode_members


def member(member_id: str, subscription: Subscription, version: int = 3) -> JoinedMember:
    return JoinedMember(member_id, None, encode_subscription(subscription, version))


def partitions(encoded: bytes) -> set[int]:
    return {tp.partition for tp in decode_assignment(encoded).partitions}


def test_a_member_with_undecodable_metadata_gets_nothing_and_the_rest_everything(
    caplog: pytest.LogCaptureFixture,
) -> None:
    members = [
        member("a", Subscription(("t",))),
        JoinedMember("garbage", None, b"\x00\x03\x00\x00\x00\x09"),  # claims 9 topics, has none
        member("b", Subscription(("t",))),
    ]
    with caplog.at_level(logging.ERROR):
        decoded = decode_members("g", members)
    assert decoded.undecodable == ("garbage",)
    assert "member garbage" in caplog.text
    out = assign_members("g", RangeAssignor(), RebalanceProtocol.EAGER, decoded, {"t": 4})
    assert set(out) == {"a", "b", "garbage"}
    assert partitions(out["garbage"]) == set()
    assert partitions(out["a"]) | partitions(out["b"]) == {0, 1, 2, 3}


def test_each_member_is_answered_in_its_own_consumer_protocol_version() -> None:
    members = [member("old", Subscription(("t",)), version=0), member("new", Subscription(("t",)))]
    out = assign_members(
        "g", RangeAssignor(), RebalanceProtocol.EAGER, decode_members("g", members), {"t": 2}
    )
    assert out["old"][:2] == b"\x00\x00"
    assert out["new"][:2] == b"\x00\x03"


def test_cooperative_generations_withhold_what_another_member_still_owns() -> None:
    """Any assignor under COOPERATIVE goes through the cooperative step (KIP-429)."""
    t = [TopicPartition("t", p) for p in range(4)]
    members = [
        member("a", Subscription(("t",), owned_partitions=tuple(t), generation=1)),
        member("b", Subscription(("t",))),
    ]
    decoded = decode_members("g", members)
    eager = assign_members("g", RangeAssignor(), RebalanceProtocol.EAGER, decoded, {"t": 4})
    cooperative = assign_members(
        "g", RangeAssignor(), RebalanceProtocol.COOPERATIVE, decoded, {"t": 4}
    )
    assert partitions(eager["b"]) == {2, 3}
    assert (
        partitions(cooperative["b"]) == set()
    )  # a still owns them: revoked first, then handed over
    assert partitions(cooperative["a"]) == {0, 1}


def test_topics_that_do_not_exist_are_left_out() -> None:
    members = [member("a", Subscription(("t", "missing")))]
    out = assign_members(
        "g",
        create_assignor("roundrobin"),
        RebalanceProtocol.EAGER,
        decode_members("g", members),
        {"t": 2},
    )
    assert {tp.topic for tp in decode_assignment(out["a"]).partitions} == {"t"}


class PickyAssignor(PartitionAssignor):
    """Fails on any user data, as an assignor with a strict user data format might."""

    name = "picky"

    def __init__(self, always: bool = False) -> None:
        self.always = always

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> GroupAssignment:
        if self.always or any(s.user_data for s in subscriptions.values()):
            raise ValueError("cannot read user data")
        return RangeAssignor().assign(partitions_per_topic, subscriptions)


def test_an_assignor_failing_on_user_data_is_retried_without_it() -> None:
    members = [member("a", Subscription(("t",), b"\xff")), member("b", Subscription(("t",)))]
    out = assign_members(
        "g", PickyAssignor(), RebalanceProtocol.EAGER, decode_members("g", members), {"t": 2}
    )
    assert partitions(out["a"]) | partitions(out["b"]) == {0, 1}


def test_an_assignor_that_always_fails_is_reported_as_a_bug() -> None:
    members = [member("a", Subscription(("t",)))]
    with pytest.raises(GroupError, match="'picky' failed even without user data"):
        assign_members(
            "g",
            PickyAssignor(always=True),
            RebalanceProtocol.EAGER,
            decode_members("g", members),
            {"t": 2},
        )


def test_no_decodable_member_means_empty_assignments() -> None:
    decoded = decode_members("g", [JoinedMember("x", None, b"")])
    assert decoded.undecodable == ("x",)
    out = assign_members("g", RangeAssignor(), RebalanceProtocol.EAGER, decoded, {"t": 2})
    assert decode_assignment(out["x"]) == Assignment(())
