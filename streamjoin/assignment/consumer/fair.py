"""`fair` (KIP-49): each partition to the least-loaded member that can consume it.

Topics are taken most constrained first: fewest subscribers first, and among those the topic
with more partitions first (then by name), so that the flexible choices stay open longest.
Ties between equally loaded members go to the lower member id. Unlike `roundrobin`, this stays
balanced when members subscribe to different topics (see the seed's example).
"""

from __future__ import annotations

from collections.abc import Mapping

from streamjoin.assignment.consumer.collector import without_collector
from streamjoin.assignment.consumer.topic_layout import topic_partitions
from streamjoin.assignment.consumer.waterfill import deal, water_caps
from streamjoin.assignment.model import (
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    Subscription,
    TopicPartition,
    sorted_partitions,
)

__all__ = ("FairAssignor",)


class FairAssignor(PartitionAssignor):
    name = "fair"

    @without_collector
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        members = sorted(subscriptions)
        subscribers: dict[str, list[int]] = {}
        for index, member in enumerate(members):
            for topic in set(subscriptions[member].topics):
                if partitions_per_topic.get(topic, 0) > 0:
                    subscribers.setdefault(topic, []).append(index)
        for indexes in subscribers.values():
            indexes.sort()
        loads = [0] * len(members)
        assigned: list[list[TopicPartition]] = [[] for _ in members]
        for topic in sorted(
            subscribers, key=lambda t: (len(subscribers[t]), -partitions_per_topic[t], t)
        ):
            eligible = subscribers[topic]
            partitions = topic_partitions(topic, partitions_per_topic[topic])
            start = [loads[i] for i in eligible]
            caps = water_caps(start, len(partitions))
            deal(partitions, start, caps, [assigned[i] for i in eligible])
            for i, cap in zip(eligible, caps, strict=True):
                loads[i] = cap
        return {
            member: Assignment(sorted_partitions(tps))
            for member, tps in zip(members, assigned, strict=True)
        }
