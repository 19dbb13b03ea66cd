"""The member's decisions at each step of a rebalance, as pure functions of what it knows.

KIP-429 and KIP-726 in code (docs/rebalancing.md): which assignor the group selected decides the
protocol of the generation; under EAGER a member revokes everything before it joins, under
COOPERATIVE it keeps what it owns and afterwards revokes only what the new assignment takes away,
then rejoins at once so the follow-up rebalance can hand those partitions over. A member that
joined holding partitions cooperatively but finds an EAGER assignor selected has lost them: the
leader may already have given them to someone else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from streamjoin.assignment.consumer.consumer_protocol import encode_subscription
from streamjoin.assignment.model import (
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    sorted_partitions,
)
from streamjoin.group.errors import ErrorCode, FatalGroupError

__all__ = (
    "AssignmentChange",
    "change_after_sync",
    "lost_on_selection",
    "protocol_of",
    "revoke_before_join",
    "select_assignor",
    "subscription_metadata",
)

Partitions = frozenset[TopicPartition]


def protocol_of(assignor: PartitionAssignor) -> RebalanceProtocol:
    """COOPERATIVE if the assignor supports it, else EAGER (KIP-726: the assignor decides)."""
    if RebalanceProtocol.COOPERATIVE in assignor.supported_protocols:
        return RebalanceProtocol.COOPERATIVE
    return RebalanceProtocol.EAGER


def select_assignor(
    assignors: Sequence[PartitionAssignor], protocol_name: str
) -> PartitionAssignor:
    """This member's assignor named by the group's selected protocol."""
    for assignor in assignors:
        if assignor.name == protocol_name:
            return assignor
    offered = ", ".join(a.name for a in assignors)
    raise FatalGroupError(
        f"the group selected protocol {protocol_name!r}, which is not among this member's "
        f"assignors ({offered}); configure that assignor too",
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    )


def subscription_metadata(
    assignor: PartitionAssignor,
    topics: Sequence[str],
    owned: Iterable[TopicPartition],
    generation: int,
    rack: str | None,
) -> bytes:
    """The member's JoinGroup metadata for one assignor (consumer protocol v3).

    It carries the generation the owned partitions belong to, so it differs from the metadata
    of the join that led to that generation: any later rejoin starts a rebalance (KAFKA-10455).
    """
    subscription = Subscription(
        topics=tuple(topics),
        user_data=assignor.subscription_user_data(topics),
        owned_partitions=sorted_partitions(owned),
        generation=generation,
        rack=rack,
    )
    return encode_subscription(subscription)


def revoke_before_join(owned: Partitions, held_as: RebalanceProtocol | None) -> Partitions:
    """What to revoke before sending JoinGroup: everything unless held cooperatively."""
    return frozenset() if held_as is RebalanceProtocol.COOPERATIVE else owned


def lost_on_selection(
    owned: Partitions, held_as: RebalanceProtocol | None, selected: RebalanceProtocol
) -> Partitions:
    """Partitions kept through the join that the selected EAGER protocol makes lost (KIP-726)."""
    if held_as is RebalanceProtocol.COOPERATIVE and selected is RebalanceProtocol.EAGER:
        return owned
    return frozenset()


@dataclass(frozen=True, slots=True)
class AssignmentChange:
    """How a member's ownership moves when it receives its assignment."""

    revoked: Partitions
    added: Partitions
    kept: Partitions
    follow_up: bool
    """Rejoin at once: partitions were revoked cooperatively and wait for their new owner."""

    @property
    def owned(self) -> Partitions:
        return self.kept | self.added


def change_after_sync(
    owned: Iterable[TopicPartition], assigned: Iterable[TopicPartition], protocol: RebalanceProtocol
) -> AssignmentChange:
    """Revoke what is owned but not assigned; add what is assigned but not owned.

    Under EAGER nothing is owned by now (revoked before the join), so everything is added and no
    follow-up is needed; under COOPERATIVE, any revocation calls for the follow-up rebalance.
    """
    before = frozenset(owned)
    after = frozenset(assigned)
    revoked = before - after
    return AssignmentChange(
        revoked=revoked,
        added=after - before,
        kept=before & after,
        follow_up=protocol is RebalanceProtocol.COOPERATIVE and bool(revoked),
    )
