"""`roundrobin`: Apache Kafka's RoundRobinAssignor.

All partitions in (topic, partition) order are dealt to the members in member-id order, round
and round; a member not subscribed to a partition's topic is skipped for that partition, and the
deal continues after the member that took it.
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
)

__all__ = ("RoundRobinAssignor",)


class RoundRobinAssignor(PartitionAssignor):
    name = "roundrobin"

    @without_collector
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        members = sorted(subscriptions)
        topics_of = [frozenset(subscriptions[m].topics) for m in members]
        assigned: list[list[TopicPartition]] = [[] for _ in members]
        topics = sorted(set().union(*topics_of))
        turn = 0
        for topic in topics:
            partitions = topic_partitions(topic, max(partitions_per_topic.get(topic, 0), 0))
            for tp in partitions:
                while topic not in topics_of[turn]:
                    turn = (turn + 1) % len(members)
                assigned[turn].append(tp)
                turn = (turn + 1) % len(members)
        return {m: Assignment(tuple(tps)) for m, tps in zip(members, assigned, strict=True)}
