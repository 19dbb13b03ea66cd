"""`cooperative-sticky`: the sticky assignment, handed out under the cooperative rule (KIP-429).

Interoperable with Java's CooperativeStickyAssignor: previous ownership is the subscription's
owned partitions (consumer protocol v1+), the generation comes from the subscription (v2+) or
else from the user data, which holds just that generation as an int32.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from streamjoin.assignment.consumer.collector import without_collector
from streamjoin.assignment.consumer.cooperative import CooperativeStep, cooperative_step
from streamjoin.assignment.consumer.sticky.assignor import PreviousOwnership, sticky_assign
from streamjoin.assignment.consumer.topic_layout import group_by_topic
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
)
from streamjoin.assignment.wire import Reader, Writer
from streamjoin.errors import ProtocolDecodeError

__all__ = ("CooperativeStickyAssignor",)

logger = logging.getLogger(__name__)


def _previous(subscription: Subscription) -> PreviousOwnership:
    generation = subscription.generation
    if generation == NO_GENERATION and subscription.user_data:
        try:
            generation = Reader(subscription.user_data, "cooperative-sticky user data").int32()
        except ProtocolDecodeError as exc:
            logger.warning("ignoring a member's generation: %s", exc)
    return group_by_topic(subscription.owned_partitions), generation


class CooperativeStickyAssignor(PartitionAssignor):
    """Sticky, then `cooperative_step`: moving partitions are revoked first, handed over after."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(self) -> None:
        self._generation = NO_GENERATION

    @without_collector
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        return self.assign_step(partitions_per_topic, subscriptions).assignment

    @without_collector
    def assign_step(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> CooperativeStep:
        """`assign`, with what is revoked now and handed over in the follow-up rebalance."""
        target = sticky_assign(
            partitions_per_topic,
            {member: s.topics for member, s in subscriptions.items()},
            {member: _previous(s) for member, s in subscriptions.items()},
        )
        return cooperative_step(
            target, {member: s.owned_partitions for member, s in subscriptions.items()}
        )

    def subscription_user_data(self, topics: Sequence[str]) -> bytes:
        if self._generation == NO_GENERATION:
            return b""
        return Writer().int32(self._generation).getvalue()

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._generation = generation
