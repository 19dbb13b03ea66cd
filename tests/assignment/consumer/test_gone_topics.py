"""Owned partitions of deleted or unsubscribed topics are ignored, as Kafka's assignors do.

In a live group a topic can be deleted (or recreated with fewer partitions) while members still
report its partitions as owned, and a member can stop subscribing to a topic it owned. Every
assignor must then assign the rest as if those claims had never been made.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.assignment.consumer.plan import plan
from streamjoin.assignment.consumer.registry import create_assignor
from streamjoin.assignment.consumer.sticky.user_data import encode_sticky_user_data
from streamjoin.assignment.model import Subscription, TopicPartition

CLAIM_BLIND = ("range", "roundrobin", "fair")
"""Assignors that read no previous ownership at all."""
STICKY = ("sticky", "cooperative-sticky")
ALL = (*CLAIM_BLIND, *STICKY, "stream-join-sticky")
GONE = "gone"
"""A topic deleted while members owned it: in no scenario's "topics"."""


@st.composite
def live_groups(draw: st.DrawFn) -> dict[str, Any]:
    """A group whose members own partitions of live, unsubscribed, shrunk and deleted topics."""
    counts = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    topics = {f"t{i}": count for i, count in enumerate(counts)}
    names = sorted(topics)
    members: dict[str, Any] = {}
    seen: set[tuple[str, int]] = set()
    for m in range(draw(st.integers(1, 5))):
        subscribed = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        claimable = st.tuples(st.sampled_from([*names, GONE]), st.integers(0, 8))
        owned = [
            [topic, partition]
            for topic, partition in draw(st.lists(claimable, max_size=8, unique=True))
            if (topic, partition) not in seen
        ]
        seen.update((topic, partition) for topic, partition in owned)
        members[f"m{m}"] = {"topics": subscribed, "owned": owned, "generation": 1}
    return {"topics": topics, "members": members}


def _ignored(group: dict[str, Any], member: str, claim: list[Any]) -> bool:
    topic, partition = claim
    spec = group["members"][member]
    return topic not in spec["topics"] or partition >= group["topics"].get(topic, 0)


def _without_ignored(group: dict[str, Any]) -> dict[str, Any]:
    members = {
        name: {**spec, "owned": [c for c in spec["owned"] if not _ignored(group, name, c)]}
        for name, spec in group["members"].items()
    }
    return {**group, "members": members}


@settings(max_examples=100, deadline=None)
@given(live_groups())
def test_ignored_claims_change_nothing_and_the_plan_is_valid(group: dict[str, Any]) -> None:
    cleaned = _without_ignored(group)
    for assignor in ALL:
        result = plan({"assignor": assignor, **group})
        summary = result["summary"]
        assert summary["valid"], (assignor, summary["problems"])
        assert summary["balance"]["balanced"] or assignor not in STICKY
        ignored = sum(
            _ignored(group, name, claim)
            for name, spec in group["members"].items()
            for claim in spec["owned"]
        )
        assert summary["ignored"] == ignored
        if assignor != "stream-join-sticky":  # it reads partition numbers, not topics
            again = plan({"assignor": assignor, **cleaned})
            assert _target(result) == _target(again), assignor


def _target(result: dict[str, Any]) -> dict[str, list[list[Any]]]:
    """Each member's partitions once the follow-up rebalance (cooperative-sticky) is done: a
    partition its former owner still holds is handed over only then, claim ignored or not."""
    later = result["summary"].get("follow_up", {})
    return {m: sorted(now + later.get(m, [])) for m, now in result["assignment"].items()}


def test_a_deleted_topic_leaves_the_rest_sticky() -> None:
    group = {
        "topics": {"t0": 4},
        "members": {
            "a": {"topics": ["t0"], "owned": [["t0", 0], ["t0", 1], [GONE, 0], [GONE, 1]]},
            "b": {"topics": ["t0"], "owned": [["t0", 2], ["t0", 3], [GONE, 2]]},
        },
    }
    for assignor in STICKY:
        summary = plan({"assignor": assignor, **group})["summary"]
        assert (summary["kept"], summary["moved"], summary["ignored"]) == (4, 0, 3)
        assert summary["released"] == 3


def test_an_unsubscribed_topic_goes_to_members_still_subscribed() -> None:
    """`a` stopped subscribing to t1: under cooperative-sticky it revokes t1 now, and the
    members subscribed to t1 get it in the follow-up rebalance; nothing else moves."""
    group = {
        "assignor": "cooperative-sticky",
        "topics": {"t0": 2, "t1": 2},
        "members": {
            "a": {"topics": ["t0"], "owned": [["t0", 0], ["t1", 0], ["t1", 1]]},
            "b": {"topics": ["t0", "t1"], "owned": [["t0", 1]]},
            "c": {"topics": ["t1"]},
        },
    }
    result = plan(group)
    assert result["assignment"] == {"a": [["t0", 0]], "b": [["t0", 1]], "c": []}
    summary = result["summary"]
    assert summary["revoked_now"] == {"a": [["t1", 0], ["t1", 1]]}
    assert sorted(summary["follow_up"]) == ["b", "c"]
    assert (summary["kept"], summary["moved"], summary["ignored"]) == (2, 2, 2)


def test_eager_sticky_user_data_naming_a_deleted_topic_is_ignored() -> None:
    """KIP-341 user data (EAGER members) carries the old assignment, deleted topics included."""
    old = (TopicPartition(GONE, 0), TopicPartition("t0", 1), TopicPartition("t0", 5))
    subscriptions = {
        "a": Subscription(("t0",), encode_sticky_user_data(old, 3)),
        "b": Subscription(("t0",)),
    }
    assignment = create_assignor("sticky").assign({"t0": 4}, subscriptions)
    assert TopicPartition("t0", 1) in assignment["a"].partitions
    assert sorted(len(a.partitions) for a in assignment.values()) == [2, 2]
