"""The plain data every assignor reads and writes: subscriptions in, assignments out.

Kept free of I/O so that assignors are pure functions of this data and can be tested, benchmarked
and planned (`streamjoin plan`) without a broker. The one thing taken from the Kafka client is
`TopicPartition`: aiokafka's own NamedTuple, so that one type names a partition everywhere in
streamjoin (aiokafka's consumer accepts no other in seek, pause and the like).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, NamedTuple

__all__ = (
    "NO_GENERATION",
    "Assignment",
    "GroupAssignment",
    "PartitionAssignor",
    "RebalanceProtocol",
    "Subscription",
    "TopicPartition",
    "sorted_partitions",
)

NO_GENERATION = -1
"""Kafka's DEFAULT_GENERATION: the member has no generation to report (new, or an old client)."""


if TYPE_CHECKING:

    class TopicPartition(NamedTuple):
        """What mypy knows of aiokafka's TopicPartition (aiokafka ships no type information)."""

        topic: str
        partition: int

else:
    from aiokafka.structs import TopicPartition


class RebalanceProtocol(enum.IntEnum):
    """How a member treats the partitions it owns during a rebalance (values are Kafka's ids)."""

    EAGER = 0
    """Revoke everything before rejoining."""
    COOPERATIVE = 1
    """Keep owned partitions; revoke only what the new assignment takes away (KIP-429)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """One member's JoinGroup metadata (Kafka consumer protocol, versions 0-3), decoded."""

    topics: tuple[str, ...]
    user_data: bytes = b""
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """What the leader hands one member in SyncGroup."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes = b""


GroupAssignment = dict[str, Assignment]
"""member id -> assignment."""


def sorted_partitions(partitions: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    """Partitions in one canonical order, so equal assignments compare and print equal."""
    return tuple(sorted(partitions))


class PartitionAssignor(ABC):
    """A consumer partition assignor under its Kafka protocol name.

    `assign` runs on the group leader and must be a pure, deterministic function of its arguments
    (the same result whatever the order of members or topics). `subscription_user_data` and
    `on_assignment` run on every member and let an assignor carry state (such as its previous
    assignment) from one generation to the next.
    """

    name: ClassVar[str]
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    @abstractmethod
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        """Assign the partitions of the subscribed topics to members.

        `partitions_per_topic` holds every subscribed topic that exists (a topic missing from it
        is not assignable); the result has an entry for every member, possibly empty.
        """

    async def before_assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> None:
        """Leader only, just before `assign`: the place for any I/O the assignment needs (such
        as reading changelog end offsets), so that `assign` itself stays pure."""

    def subscription_user_data(self, topics: Sequence[str]) -> bytes:
        """User data this member sends with its subscription."""
        return b""

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """Called on the member once it has received its assignment for `generation`."""
