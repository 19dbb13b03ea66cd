"""Any streamjoin assignor as an aiokafka `AbstractPartitionAssignor`.

This lets a plain `aiokafka.AIOKafkaConsumer` use `sticky`, `fair`, `stream-join-sticky` and the
others: `AIOKafkaConsumer(..., partition_assignment_strategy=[AiokafkaAssignor("sticky")])`.

aiokafka's own coordinator is EAGER (members revoke everything before rejoining), decodes member
metadata as consumer protocol v0 (topics and user data only) and does not tell assignors the
generation. So members report no owned partitions, previous ownership travels in the assignor's
user data (as it does for `sticky` and `stream-join-sticky`), and claims carry no generation:
two members claiming the same partition both lose it. `cooperative-sticky` runs, but without
owned partitions it has no history to stick to under EAGER, exactly as in Java.

Give each consumer its own adapter: assignors keep the member's previous assignment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from streamjoin.assignment.consumer.registry import create_assignor
from streamjoin.assignment.consumer.topic_layout import group_by_topic
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    PartitionAssignor,
    Subscription,
    TopicPartition,
)

__all__ = ("AiokafkaAssignor",)

_VERSION = 0
"""Consumer protocol version of what we send; aiokafka reads only v0's fields anyway."""


class AiokafkaAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """Adapts one streamjoin assignor (given by protocol name or as an instance) to aiokafka."""

    def __init__(self, assignor: str | PartitionAssignor) -> None:
        self.assignor = create_assignor(assignor) if isinstance(assignor, str) else assignor

    @property
    def name(self) -> str:
        return self.assignor.name

    def assign(
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        subscriptions = {
            member: Subscription(tuple(metadata.subscription), metadata.user_data or b"")
            for member, metadata in members.items()
        }
        partitions_per_topic: dict[str, int] = {}
        for subscription in subscriptions.values():
            for topic in subscription.topics:
                partitions = cluster.partitions_for_topic(topic)
                if partitions:
                    partitions_per_topic[topic] = len(partitions)
        assignment = self.assignor.assign(partitions_per_topic, subscriptions)
        return {
            member: ConsumerProtocolMemberAssignment(
                _VERSION,
                sorted(group_by_topic(given.partitions).items()),
                given.user_data,
            )
            for member, given in assignment.items()
        }

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        subscribed = sorted(topics)
        return ConsumerProtocolMemberMetadata(
            _VERSION, subscribed, self.assignor.subscription_user_data(subscribed)
        )

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        partitions = tuple(
            TopicPartition(topic, partition)
            for topic, partitions in assignment.assignment
            for partition in partitions
        )
        self.assignor.on_assignment(
            Assignment(partitions, assignment.user_data or b""), NO_GENERATION
        )
