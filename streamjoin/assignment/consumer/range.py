"""`range`: Apache Kafka's RangeAssignor (the pre-3.0 default).

Per topic, the subscribed members in member-id order each take a consecutive range of
partitions; the first `partitions % members` of them take one extra. Members that subscribe to
the same topics therefore get the same partition numbers of each, which is what joins need,
but with several topics the first members are loaded more.
"""

from __future__ import annotations

from collections.abc import Mapping

from streamjoin.assignment.consumer.collector import without_collector
from streamjoin.assignment.consumer.topic_layout import topic_partitions
from streamjoin.assignment.model import (
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    Subscription,
    TopicPartition,
    sorted_partitions,
)

__all__ = ("RangeAssignor",)


class RangeAssignor(PartitionAssignor):
    name = "range"

    @without_collector
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        members_of: dict[str, list[str]] = {}
        for member in sorted(subscriptions):
            for topic in set(subscriptions[member].topics):
                members_of.setdefault(topic, []).append(member)
        assigned: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        for topic, members in members_of.items():
            partitions = topic_partitions(topic, max(partitions_per_topic.get(topic, 0), 0))
            share, extra = divmod(len(partitions), len(members))
            start = 0
            for i, member in enumerate(members):
                end = start + share + (1 if i < extra else 0)
                assigned[member].extend(partitions[start:end])
                start = end
        return {member: Assignment(sorted_partitions(tps)) for member, tps in assigned.items()}
