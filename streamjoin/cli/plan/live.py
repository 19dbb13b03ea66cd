"""Read a live consumer group into a `plan` scenario: members, subscriptions, current assignment.

DescribeGroups returns each member's JoinGroup metadata and SyncGroup assignment (decoded with the
Kafka consumer protocol codec) while the group is Stable; topic metadata gives partition counts.
Not every broker fills those fields in: the embedded one (Tansu) returns members with empty
metadata, and then this says so instead of planning from nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from aiokafka.errors import IncompatibleBrokerVersion, KafkaError, UnsupportedVersionError

from streamjoin.assignment.consumer.consumer_protocol import decode_assignment, decode_subscription
from streamjoin.assignment.consumer.sticky.stream_join import StreamJoinStickyAssignor
from streamjoin.assignment.consumer.sticky.stream_join_user_data import (
    decode_stream_join_assignment,
)
from streamjoin.assignment.model import NO_GENERATION
from streamjoin.cli.plan.live_tasks import task_group_scenario
from streamjoin.errors import ConfigurationError, ProtocolDecodeError
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.groups import Member, describe_group

__all__ = ("group_scenario", "read_group_scenario")


def read_group_scenario(
    group: str, bootstrap: KafkaTarget, timeout_s: float = 15.0, *, tasks: bool = False
) -> dict[str, Any]:
    """The scenario of `group` as the broker at `bootstrap` sees it now (`tasks`: the task
    scenario of a streamjoin worker group, live_tasks.py).

    Raises a StreamJoinError (one line) when the broker cannot be reached, cannot describe
    groups, or the group cannot be planned (no members, rebalancing, no metadata reported).
    """
    try:
        return asyncio.run(asyncio.wait_for(_read(group, bootstrap, tasks=tasks), timeout_s))
    except (UnsupportedVersionError, IncompatibleBrokerVersion) as exc:
        raise ConfigurationError(
            f"the broker at {bootstrap} does not support describing groups "
            f"(DescribeGroups), so group {group!r} cannot be read: {exc}"
        ) from None
    except (KafkaError, OSError, TimeoutError) as exc:
        raise ConfigurationError(
            f"cannot read group {group!r} from the broker at {bootstrap}: "
            f"{type(exc).__name__} {exc}".rstrip()
        ) from None


async def _read(group: str, bootstrap: KafkaTarget, *, tasks: bool) -> dict[str, Any]:
    described = await describe_group(group, bootstrap)
    state, protocol_type, protocol = described.state, described.protocol_type, described.protocol
    members, topics = described.members, described.topics
    if tasks:
        _check_plannable(group, state=state, protocol_type=protocol_type, members=members)
        return task_group_scenario(group, protocol, members)
    return group_scenario(
        group,
        state=state,
        protocol_type=protocol_type,
        protocol=protocol,
        members=members,
        topics=topics,
    )


def _check_plannable(
    group: str, *, state: str, protocol_type: str, members: Sequence[Member]
) -> None:
    """Refuse, in one line, a group that cannot be planned from what the broker described."""
    if not members:
        raise ConfigurationError(f"group {group!r} has no members (state {state!r})")
    if protocol_type != "consumer":
        raise ConfigurationError(
            f"group {group!r} is not a consumer group (protocol type {protocol_type!r})"
        )
    if state != "Stable":
        raise ConfigurationError(
            f"group {group!r} is rebalancing (state {state!r}); try again once it is Stable"
        )
    if any(not metadata for *_, metadata, _ in members):
        raise ConfigurationError(
            f"the broker described group {group!r} without its members' subscriptions and "
            "assignments (empty DescribeGroups metadata, as the embedded broker does), so it "
            "cannot be planned from the broker; write a scenario file instead"
        )


def group_scenario(
    group: str,
    *,
    state: str,
    protocol_type: str,
    protocol: str,
    members: Sequence[Member],
    topics: dict[str, int],
) -> dict[str, Any]:
    """A scenario from one group's DescribeGroups entry and the cluster's partition counts."""
    _check_plannable(group, state=state, protocol_type=protocol_type, members=members)
    topics = dict(topics)
    scenario: dict[str, Any] = {}
    for member_id, _client_id, _host, metadata, assignment_bytes in members:
        try:
            subscription = decode_subscription(metadata)
            assignment = decode_assignment(assignment_bytes)
            generation = subscription.generation
            if protocol == StreamJoinStickyAssignor.name and assignment.user_data:
                generation = decode_stream_join_assignment(assignment.user_data)
        except ProtocolDecodeError as exc:
            raise ConfigurationError(f"member {member_id!r} of group {group!r}: {exc}") from None
        for topic in subscription.topics:
            topics.setdefault(topic, 0)  # subscribed but not created yet
        spec: dict[str, Any] = {
            "topics": sorted(set(subscription.topics)),
            "owned": [
                [tp.topic, tp.partition]
                for tp in assignment.partitions
                if tp.partition < topics.get(tp.topic, 0)  # skip deleted topics' partitions
            ],
        }
        if generation != NO_GENERATION:
            spec["generation"] = generation
        scenario[member_id] = spec
    return {"assignor": protocol, "topics": topics, "members": scenario}
