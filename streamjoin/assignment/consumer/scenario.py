"""The `streamjoin plan` scenario format: read, checked, and turned into subscriptions.

    {"assignor": "sticky",
     "topics": {"t0": 8, "t1": 4},
     "members": {"m1": {"topics": ["t0", "t1"], "owned": [["t0", 0], ["t1", 2]], "generation": 3},
                 "m2": {"topics": ["t0"]}}}

Tools outside the package read and write this format, so it is checked strictly and every
mistake is reported as one line naming the exact place (`members.m1.owned[1]`). Owned partitions
of topics that are gone (missing from "topics", or beyond its partition count) or that the member
no longer subscribes to are not mistakes: a live group reports them after a topic is deleted or a
subscription changes, and the assignors ignore them as Kafka's do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamjoin.assignment.consumer.registry import ASSIGNORS
from streamjoin.assignment.consumer.sticky.stream_join import StreamJoinStickyAssignor
from streamjoin.assignment.consumer.sticky.stream_join_user_data import (
    encode_stream_join_subscription,
)
from streamjoin.assignment.model import NO_GENERATION, Subscription, TopicPartition
from streamjoin.errors import ConfigurationError

__all__ = ("MemberSpec", "Scenario", "parse_scenario")

_SCENARIO_KEYS = ("assignor", "topics", "members")
_MEMBER_KEYS = ("topics", "owned", "generation")


@dataclass(frozen=True, slots=True)
class MemberSpec:
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    assignor: str
    topics: dict[str, int]
    members: dict[str, MemberSpec]

    def subscriptions(self) -> dict[str, Subscription]:
        """Each member's subscription as the assignor would receive it.

        `owned` and `generation` become the subscription's owned partitions and generation
        (consumer protocol v2); for `stream-join-sticky`, which reads previous ownership from
        its user data, they become that user data (owned partition numbers and epoch).
        """
        subscriptions: dict[str, Subscription] = {}
        for name, spec in self.members.items():
            generation = NO_GENERATION if spec.generation is None else spec.generation
            if self.assignor == StreamJoinStickyAssignor.name:
                numbers = sorted({tp.partition for tp in spec.owned})
                user_data = (
                    encode_stream_join_subscription(numbers, generation) if spec.owned else b""
                )
                subscriptions[name] = Subscription(spec.topics, user_data)
            else:
                subscriptions[name] = Subscription(spec.topics, b"", spec.owned, generation)
        return subscriptions


def _fail(where: str, problem: str) -> ConfigurationError:
    return ConfigurationError(f"scenario: {where}: {problem}" if where else f"scenario: {problem}")


def _check_keys(value: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in value:
        if key not in allowed:
            expected = ", ".join(allowed)
            raise _fail(where, f"unknown key {key!r} (expected {expected})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _topics(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise _fail("topics", "must be an object of topic name -> partition count")
    for topic, count in value.items():
        if not _is_int(count) or count < 0:
            raise _fail(
                f"topics.{topic}", f"partition count must be a non-negative integer, got {count!r}"
            )
    return dict(value)


def _partition(value: Any, where: str) -> TopicPartition:
    if not (isinstance(value, list) and len(value) == 2):
        raise _fail(where, f"must be [topic, partition], got {value!r}")
    topic, partition = value
    if not isinstance(topic, str) or not _is_int(partition):
        raise _fail(where, f"must be [topic, partition], got {value!r}")
    if partition < 0:
        raise _fail(where, f"partition {partition} is negative")
    # A topic missing from "topics", or with fewer partitions now, was deleted (and perhaps
    # recreated) while the member owned it: as in a live group, assignors ignore such claims.
    return TopicPartition(topic, partition)


def _member(value: Any, topics: Mapping[str, int], where: str) -> MemberSpec:
    if not isinstance(value, dict):
        raise _fail(where, 'must be an object with "topics" (and optional owned, generation)')
    _check_keys(value, _MEMBER_KEYS, where)
    subscribed = value.get("topics")
    if not isinstance(subscribed, list):
        raise _fail(f"{where}.topics", "must be a list of topic names")
    for i, topic in enumerate(subscribed):
        if not isinstance(topic, str):
            raise _fail(f"{where}.topics[{i}]", f"must be a topic name, got {topic!r}")
        if topic not in topics:
            raise _fail(f"{where}.topics[{i}]", f'topic {topic!r} is not in "topics"')
    owned = value.get("owned", [])
    if not isinstance(owned, list):
        raise _fail(f"{where}.owned", "must be a list of [topic, partition]")
    generation = value.get("generation")
    if generation is not None and not _is_int(generation):
        raise _fail(f"{where}.generation", f"must be an integer, got {generation!r}")
    return MemberSpec(
        tuple(subscribed),
        tuple(_partition(tp, f"{where}.owned[{i}]") for i, tp in enumerate(owned)),
        generation,
    )


def parse_scenario(value: Any) -> Scenario:
    """Check a scenario (parsed JSON) and return it typed; raises ConfigurationError."""
    if not isinstance(value, dict):
        raise _fail("", 'must be a JSON object with "assignor", "topics" and "members"')
    _check_keys(value, _SCENARIO_KEYS, "")
    for key in _SCENARIO_KEYS:
        if key not in value:
            raise _fail("", f"missing {key!r}")
    assignor = value["assignor"]
    if not isinstance(assignor, str) or assignor not in ASSIGNORS:
        known = ", ".join(sorted(ASSIGNORS))
        raise _fail("assignor", f"unknown assignor {assignor!r} (known: {known})")
    topics = _topics(value["topics"])
    members = value["members"]
    if not isinstance(members, dict):
        raise _fail("members", "must be an object of member id -> member")
    return Scenario(
        assignor,
        topics,
        {name: _member(spec, topics, f"members.{name}") for name, spec in members.items()},
    )
