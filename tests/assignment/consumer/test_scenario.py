from __future__ import annotations

from typing import Any

import pytest

from streamjoin.assignment.consumer.scenario import parse_scenario
from streamjoin.assignment.consumer.sticky.stream_join_user_data import (
    decode_stream_join_subscription,
)
from streamjoin.assignment.model import NO_GENERATION, TopicPartition
from streamjoin.errors import ConfigurationError


def scenario(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "assignor": "sticky",
        "topics": {"t0": 8, "t1": 4},
        "members": {
            "m1": {"topics": ["t0", "t1"], "owned": [["t0", 0], ["t1", 2]], "generation": 3},
            "m2": {"topics": ["t0"]},
        },
    }
    base.update(changes)
    return base


def test_the_issue_example_parses() -> None:
    parsed = parse_scenario(scenario())
    assert parsed.members["m1"].owned == (TopicPartition("t0", 0), TopicPartition("t1", 2))
    assert parsed.members["m2"].generation is None
    subscriptions = parsed.subscriptions()
    assert subscriptions["m1"].owned_partitions == parsed.members["m1"].owned
    assert subscriptions["m1"].generation == 3
    assert subscriptions["m2"].generation == NO_GENERATION


def test_stream_join_sticky_gets_owned_and_generation_as_user_data() -> None:
    parsed = parse_scenario(scenario(assignor="stream-join-sticky"))
    data = decode_stream_join_subscription(parsed.subscriptions()["m1"].user_data)
    assert (data.owned_numbers, data.epoch) == ((0, 2), 3)
    assert parsed.subscriptions()["m2"].user_data == b""


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([1], "scenario: must be a JSON object"),
        ({"assignor": "sticky", "topics": {}}, "scenario: missing 'members'"),
        (scenario(extra=1), "scenario: unknown key 'extra'"),
        (scenario(assignor="stickyy"), "scenario: assignor: unknown assignor 'stickyy' (known:"),
        (
            scenario(topics={"t0": -1}),
            "scenario: topics.t0: partition count must be a non-negative",
        ),
        (scenario(topics={"t0": True}), "scenario: topics.t0: partition count must be"),
        (
            scenario(members={"m": {"topics": ["t9"]}}),
            "scenario: members.m.topics[0]: topic 't9' is not in \"topics\"",
        ),
        (
            scenario(members={"m": {"topics": ["t0"], "owned": [["t0", -1]]}}),
            "scenario: members.m.owned[0]: partition -1 is negative",
        ),
        (
            scenario(members={"m": {"topics": ["t0"], "owned": ["t0-1"]}}),
            "scenario: members.m.owned[0]: must be [topic, partition]",
        ),
        (
            scenario(members={"m": {"topics": ["t0"], "generation": "3"}}),
            "scenario: members.m.generation: must be an integer",
        ),
        (scenario(members={"m": {"topic": ["t0"]}}), "scenario: members.m: unknown key 'topic'"),
        (scenario(members=[]), "scenario: members: must be an object"),
    ],
)
def test_mistakes_are_one_line_naming_the_place(bad: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_scenario(bad)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_owned_partitions_of_gone_or_unsubscribed_topics_are_kept_for_the_assignor() -> None:
    """A live group reports them after a topic deletion; the assignors ignore them."""
    owned = [["t0", 0], ["t7", 1], ["t1", 4], ["t1", 0]]
    parsed = parse_scenario(scenario(members={"m": {"topics": ["t0"], "owned": owned}}))
    assert parsed.members["m"].owned == tuple(TopicPartition(t, p) for t, p in owned)
