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
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

__all__ = (
    "NO_GENERATION",
    "Assignment",
    "GroupAssignment",
    "PartitionAssignor",
    "PartitionSource",
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


class PartitionSource(Protocol):
    """Partitions an assignor holds in a compact form, made into `TopicPartition`s on demand."""

    def partitions(self) -> tuple[TopicPartition, ...]:
        """Every partition, by topic and then by number."""

    def by_topic(self) -> list[tuple[str, Sequence[int]]]:
        """Partition numbers per topic, topics by name, numbers ascending."""


class Assignment:
    """What the leader hands one member in SyncGroup.

    Assignors may give `partitions` as a `PartitionSource`: then the `TopicPartition`s are made
    only when first read, and `by_topic` (what the leader encodes for SyncGroup) never makes
    them. At 100,000 partitions making them takes a fresh process (a leader's first rebalance
    after a restart) about 12 ms, twice Kafka's whole warm assignment of a fresh group.
    """

    __slots__ = ("_partitions", "_source", "user_data")

    def __init__(
        self,
        partitions: tuple[TopicPartition, ...] | PartitionSource,
        user_data: bytes = b"",
    ) -> None:
        self._partitions: tuple[TopicPartition, ...] | None
        self._source: PartitionSource | None
        if isinstance(partitions, tuple):
            self._partitions, self._source = partitions, None
        else:
            self._partitions, self._source = None, partitions
        self.user_data = user_data

    @property
    def partitions(self) -> tuple[TopicPartition, ...]:
        if self._partitions is None:
            assert self._source is not None
            self._partitions = self._source.partitions()
        return self._partitions

    def by_topic(self) -> list[tuple[str, Sequence[int]]]:
        """Partition numbers per topic, topics by name, numbers ascending."""
        if self._partitions is None and self._source is not None:
            return self._source.by_topic()
        grouped: dict[str, list[int]] = {}
        for topic, partition in sorted(self.partitions):
            grouped.setdefault(topic, []).append(partition)
        return list(grouped.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Assignment):
            return NotImplemented
        return (self.partitions, self.user_data) == (other.partitions, other.user_data)

    def __hash__(self) -> int:
        return hash((self.partitions, self.user_data))

    def __repr__(self) -> str:
        return f"Assignment(partitions={self.partitions!r}, user_data={self.user_data!r})"


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
