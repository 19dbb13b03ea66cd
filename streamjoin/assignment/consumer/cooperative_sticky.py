"""`cooperative-sticky`: the sticky assignment, handed out under the cooperative rule (KIP-429).

Interoperable with Java's CooperativeStickyAssignor: previous ownership is the subscription's
owned partitions (consumer protocol v1+), the generation comes from the subscription (v2+) or
else from the user data, which holds just that generation as an int32.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from streamjoin.assignment.consumer.collector import without_collector
from streamjoin.assignment.consumer.cooperative import CooperativeStep
from streamjoin.assignment.consumer.sticky.assignor import (
    PreviousOwnership,
    StickyNumbers,
    sticky_numbers,
)
from streamjoin.assignment.consumer.topic_layout import NumberedPartitions, group_by_topic
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    sorted_partitions,
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


def _cooperative_numbers(
    target: StickyNumbers, owned: Mapping[str, Sequence[TopicPartition]]
) -> CooperativeStep:
    """`cooperative_step(target.assignment(), owned)`, worked out on partition numbers.

    Most members keep exactly what they own, which a comparison of number lists shows; only
    the others are looked at partition by partition, and only the partitions that move become
    `TopicPartition`s (see `Assignment`).
    """
    layout = target.layout
    anyone_owns = any(owned.values())
    claimed_by_anyone: set[int] = set().union(*target.claimed) if anyone_owns else set()
    assignment: GroupAssignment = {}
    revoked: dict[str, tuple[TopicPartition, ...]] = {}
    pending: dict[str, tuple[TopicPartition, ...]] = {}
    for member, numbers, claimed in zip(
        target.members, target.numbers, target.claimed, strict=True
    ):
        reported = owned.get(member, ())
        given = Assignment(NumberedPartitions(layout, numbers)) if numbers else _NOTHING
        assignment[member] = given
        if not (reported or anyone_owns):
            continue  # nobody owns anything: nobody gains what another owns
        if len(reported) == len(claimed) and list(numbers) == sorted(claimed):
            continue  # keeps exactly what it owns
        # What it gains and another member still owns waits for the follow-up rebalance.
        withheld = claimed_by_anyone.intersection(numbers).difference(claimed)
        if withheld:
            now = [n for n in numbers if n not in withheld]
            assignment[member] = Assignment(NumberedPartitions(layout, now)) if now else _NOTHING
            pending[member] = layout.to_partitions(sorted(withheld))
        kept = set(numbers)
        dropped = {tp for tp in reported if layout.number(tp) not in kept}
        if dropped:
            revoked[member] = sorted_partitions(dropped)
    return CooperativeStep(assignment, revoked, pending)


_NOTHING = Assignment(())


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
        target = sticky_numbers(
            partitions_per_topic,
            {member: s.topics for member, s in subscriptions.items()},
            {member: _previous(s) for member, s in subscriptions.items()},
        )
        return _cooperative_numbers(
            target, {member: s.owned_partitions for member, s in subscriptions.items()}
        )

    def subscription_user_data(self, topics: Sequence[str]) -> bytes:
        if self._generation == NO_GENERATION:
            return b""
        return Writer().int32(self._generation).getvalue()

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._generation = generation
