"""`sticky` (KIP-54 with KIP-341's generation fix): as balanced as possible, then as sticky.

Balanced means at least what KIP-54 says (counts differ by at most one, or no partition can move
to a member that could consume it and holds two or more fewer), and more: the spread is the least
any assignment of the group reaches, even where only a chain of moves gets there (mixed
subscriptions; see `optimal`). Within that, as many partitions as possible stay with their
previous owner. Previous ownership comes from each member's report; when two members claim a
partition the higher generation wins (see `claims`). Owned partitions of topics that are gone or
no longer subscribed to are ignored.

`sticky_numbers` is the shared core (cooperative-sticky runs it too); it picks the quota path when
all members subscribe to the same topics (dealt straight from the partition table when nobody
owns anything yet: `fresh_numbers`) and KIP-54's general algorithm otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from streamjoin.assignment.consumer.claims import resolve_claims
from streamjoin.assignment.consumer.collector import without_collector
from streamjoin.assignment.consumer.sticky.general import general_assign
from streamjoin.assignment.consumer.sticky.quota import fresh_numbers, quota_assign
from streamjoin.assignment.consumer.sticky.user_data import (
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from streamjoin.assignment.consumer.topic_layout import (
    NumberedPartitions,
    TopicLayout,
    group_by_topic,
)
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    Subscription,
    TopicPartition,
)
from streamjoin.errors import ProtocolDecodeError

__all__ = (
    "PreviousOwnership",
    "StickyAssignor",
    "StickyNumbers",
    "sticky_assign",
    "sticky_numbers",
)

logger = logging.getLogger(__name__)

_NOTHING = Assignment(())

PreviousOwnership = tuple[Mapping[str, Sequence[int]], int]
"""A member's previously owned partition numbers per topic, and the generation they are from."""


@dataclass(frozen=True, slots=True)
class StickyNumbers:
    """`sticky_assign`'s answer as partition numbers of `layout`, with what members claimed."""

    layout: TopicLayout
    members: list[str]
    """Every member, in name order."""
    numbers: list[Sequence[int]]
    """Per member, its partitions' numbers, ascending."""
    claimed: list[list[int]]
    """Per member, the numbers of the existing partitions it reported owning (of any topic it
    owns, subscribed or not, whatever its generation; empty in a fresh group)."""

    def assignment(self) -> GroupAssignment:
        return {
            member: Assignment(NumberedPartitions(self.layout, numbers)) if numbers else _NOTHING
            for member, numbers in zip(self.members, self.numbers, strict=True)
        }


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    topics_by_member: Mapping[str, Iterable[str]],
    previous: Mapping[str, PreviousOwnership],
) -> GroupAssignment:
    """Balanced-then-sticky assignment of the members' subscribed, existing partitions."""
    return sticky_numbers(partitions_per_topic, topics_by_member, previous).assignment()


def sticky_numbers(
    partitions_per_topic: Mapping[str, int],
    topics_by_member: Mapping[str, Iterable[str]],
    previous: Mapping[str, PreviousOwnership],
) -> StickyNumbers:
    """`sticky_assign`, as numbers."""
    members = sorted(topics_by_member)
    subscribed = [frozenset(topics_by_member[m]) for m in members]
    layout = TopicLayout(partitions_per_topic, chain.from_iterable(subscribed))
    every_topic = frozenset(layout.base)
    subscribed = [topics.intersection(every_topic) for topics in subscribed]
    claimed: list[list[int]] = [[] for _ in members]
    owned: list[list[int]] = [[] for _ in members]
    if any(by_topic for by_topic, _ in previous.values()):  # else a fresh group: nothing to keep
        claims: list[tuple[Sequence[int], int]] = []
        for i, (member, topics) in enumerate(zip(members, subscribed, strict=True)):
            by_topic, generation = previous.get(member, ({}, NO_GENERATION))
            claimed[i] = layout.numbers(by_topic, every_topic)
            valid = claimed[i] if topics == every_topic else layout.numbers(by_topic, topics)
            claims.append((valid, generation))
        owned = resolve_claims(claims)

    consuming = [i for i, topics in enumerate(subscribed) if topics]
    numbers: list[Sequence[int]] = [[] for _ in members]
    identical = len({subscribed[i] for i in consuming}) == 1
    if identical and not any(owned):
        for i, dealt in zip(consuming, fresh_numbers(layout.total, len(consuming)), strict=True):
            numbers[i] = dealt
    elif identical:
        quota = quota_assign(layout.total, [owned[i] for i in consuming])
        for i, assigned in zip(consuming, quota, strict=True):
            numbers[i] = sorted(assigned)
    elif consuming:
        position = {topic: t for t, topic in enumerate(layout.topics)}
        ranges = [range(layout.base[t], layout.base[t] + layout.count[t]) for t in layout.topics]
        member_topics = [sorted(position[t] for t in subscribed[i]) for i in consuming]
        general = general_assign(ranges, member_topics, [owned[i] for i in consuming])
        for i, partitions in zip(consuming, general, strict=True):
            numbers[i] = partitions
    return StickyNumbers(layout, members, numbers, claimed)


def _previous_from_user_data(subscription: Subscription) -> PreviousOwnership:
    if subscription.owned_partitions:
        # Consumer protocol v1+: the member reports what it owns outside the user data.
        return group_by_topic(subscription.owned_partitions), subscription.generation
    if not subscription.user_data:
        return {}, subscription.generation
    try:
        data = decode_sticky_user_data(subscription.user_data)
    except ProtocolDecodeError as exc:
        logger.warning("ignoring a member's previous assignment: %s", exc)
        return {}, subscription.generation
    generation = data.generation
    if generation == NO_GENERATION:
        generation = subscription.generation
    return data.partitions_by_topic, generation


class StickyAssignor(PartitionAssignor):
    """Kafka's `sticky` protocol, interoperable with Java's StickyAssignor (same user data).

    EAGER only: members revoke everything before rejoining, so their previous assignment travels
    in the subscription user data (or in owned partitions, if the member reports them).
    """

    name = "sticky"

    def __init__(self) -> None:
        self._owned: tuple[TopicPartition, ...] | None = None
        self._generation = NO_GENERATION

    @without_collector
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        return sticky_assign(
            partitions_per_topic,
            {member: s.topics for member, s in subscriptions.items()},
            {member: _previous_from_user_data(s) for member, s in subscriptions.items()},
        )

    def subscription_user_data(self, topics: Sequence[str]) -> bytes:
        if self._owned is None:
            return b""
        return encode_sticky_user_data(self._owned, self._generation)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._owned = assignment.partitions
        self._generation = generation
