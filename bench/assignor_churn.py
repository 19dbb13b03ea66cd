"""Churning consumer groups, rebalance after rebalance: streamjoin's sticky assignors against
Kafka's on the very same inputs at every step.

A scenario is a family and a seed. It starts from a fresh group and, between rebalances, changes
the group the way live groups change (the families below); after each rebalance every member
owns what the driving assignor gave it (`driver`: streamjoin's or Kafka's), and the next
rebalance gives both assignors the same subscriptions, owned partitions and generations.
Compared per step: partitions kept (assigned to the member that owned them before), the spread
(most minus fewest partitions among members that consume something) and KIP-54 balance.

Families:
  leave-join  identical subscriptions; one member leaves, one joins, or both
  bursts      identical subscriptions; up to a third of the group leaves and as many join
  bounce      identical subscriptions; a member restarts and rejoins owning nothing
  mixed       each member subscribes to its own subset of the topics; members leave and join
  rolling     members change their subscriptions a few at a time
  topics      topics grow, appear and disappear while members own their partitions
  zombie      a member drops out unnoticed and comes back later claiming what it owned, with
              its old generation, while others own it now
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_assignors import JavaMember, KafkaAssignors

from streamjoin.assignment.consumer.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.consumer.sticky.user_data import encode_sticky_user_data
from streamjoin.assignment.consumer.summary import is_balanced
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    Subscription,
    TopicPartition,
)

__all__ = (
    "FAMILIES",
    "LeaderCall",
    "Outcome",
    "Scale",
    "run_scenario",
    "streamjoin_assign",
    "streamjoin_call",
)

FAMILIES = ("leave-join", "bursts", "bounce", "mixed", "rolling", "topics", "zombie")

Owned = dict[str, tuple[TopicPartition, ...]]


@dataclass(frozen=True)
class Scale:
    """How large the generated groups are."""

    members: tuple[int, int] = (2, 9)
    topics: tuple[int, int] = (1, 4)
    partitions: tuple[int, int] = (1, 24)
    steps: int = 6


@dataclass(frozen=True)
class Outcome:
    """One rebalance of one scenario, both assignors on the same input."""

    step: int
    kept: tuple[int, int]
    """Partitions kept: (streamjoin, Kafka)."""
    spread: tuple[int, int]
    balanced: tuple[bool, bool]


@dataclass
class _Group:
    counts: dict[str, int]
    topics: dict[str, tuple[str, ...]]
    owned: Owned = field(default_factory=dict)
    generation: int = 0
    zombies: dict[str, tuple[tuple[str, ...], tuple[TopicPartition, ...], int]] = field(
        default_factory=dict
    )
    """Members that dropped out unnoticed: their topics, stale partitions and generation."""
    returning: dict[str, tuple[tuple[TopicPartition, ...], int]] = field(default_factory=dict)
    """Zombies back in this step: what they claim, of which generation."""
    serial: int = 0

    def new_member(self) -> str:
        self.serial += 1
        return f"member-{self.serial:03d}"

    def members(self) -> dict[str, JavaMember]:
        """What each member reports when it joins this rebalance."""
        joined: dict[str, JavaMember] = {}
        for member, topics in sorted(self.topics.items()):
            if member in self.returning:
                claimed, generation = self.returning[member]
                joined[member] = JavaMember(topics, claimed, generation)
            elif member in self.owned:
                joined[member] = JavaMember(topics, self.owned[member], self.generation)
            else:
                joined[member] = JavaMember(topics)
        return joined


@dataclass(frozen=True)
class LeaderCall:
    """streamjoin's assignor as a group leader calls it, on prepared subscriptions."""

    run: Callable[[], Any]
    sent: Callable[[Any], GroupAssignment]
    """What the leader encodes for SyncGroup now, from `run`'s result."""
    read: Callable[[Any], Owned]
    """Where the group stands once any follow-up rebalance is done, from `run`'s result."""


def streamjoin_call(
    assignor: str, counts: Mapping[str, int], members: Mapping[str, JavaMember]
) -> LeaderCall:
    """streamjoin's `assignor` on the group as its own members would report it."""
    if assignor == "sticky":
        sticky = StickyAssignor()
        subscriptions = {
            m: Subscription(
                tuple(j.topics),
                encode_sticky_user_data(j.owned, j.generation) if j.generation >= 0 else b"",
            )
            for m, j in members.items()
        }
        return LeaderCall(lambda: sticky.assign(counts, subscriptions), _same, _partitions)
    cooperative = CooperativeStickyAssignor()
    subscriptions = {
        m: Subscription(
            tuple(j.topics),
            b"",
            tuple(j.owned),
            j.generation if j.generation >= 0 else NO_GENERATION,
        )
        for m, j in members.items()
    }
    return LeaderCall(
        lambda: cooperative.assign_step(counts, subscriptions),
        lambda step: step.assignment,
        lambda step: _partitions(step.target()),
    )


def _same(assignment: GroupAssignment) -> GroupAssignment:
    return assignment


def streamjoin_assign(
    assignor: str, counts: Mapping[str, int], members: Mapping[str, JavaMember]
) -> Owned:
    """`streamjoin_call`'s call, read."""
    call = streamjoin_call(assignor, counts, members)
    return call.read(call.run())


def _partitions(assignment: GroupAssignment) -> Owned:
    return {m: a.partitions for m, a in assignment.items()}


def _figures(
    result: Owned, owners: Mapping[TopicPartition, str], group: _Group
) -> tuple[int, int, bool]:
    kept = sum(1 for m, parts in result.items() for tp in parts if owners.get(tp) == m)
    eligible = {m: [t for t in ts if group.counts.get(t)] for m, ts in group.topics.items()}
    loads = [len(result.get(m, ())) for m, ts in eligible.items() if ts]
    spread = max(loads) - min(loads) if loads else 0
    balanced = is_balanced({m: Assignment(result.get(m, ())) for m in eligible}, eligible)
    return kept, spread, balanced


def run_scenario(
    family: str,
    seed: int,
    assignor: str,
    java: KafkaAssignors,
    *,
    driver: str = "streamjoin",
    scale: Scale = Scale(),
) -> Iterator[Outcome]:
    """The scenario's rebalances, one outcome each, as they happen."""
    rng = random.Random(f"{family}/{seed}")
    group = _start(family, rng, scale)
    for step in range(scale.steps):
        if step:
            _CHANGES[family](group, rng, scale)
        members = group.members()
        owners = {tp: m for m, parts in group.owned.items() for tp in parts}
        ours = streamjoin_assign(assignor, group.counts, members)
        theirs = java.assign(assignor, group.counts, members).assignment
        mine, kafka = _figures(ours, owners, group), _figures(theirs, owners, group)
        yield Outcome(step, (mine[0], kafka[0]), (mine[1], kafka[1]), (mine[2], kafka[2]))
        group.owned = dict(ours if driver == "streamjoin" else theirs)
        group.generation += 1
        group.returning = {}


def _topic_names(count: int) -> list[str]:
    return [f"topic-{chr(ord('a') + i)}" for i in range(count)]


def _subset(rng: random.Random, topics: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(rng.sample(list(topics), rng.randint(1, len(topics)))))


def _start(family: str, rng: random.Random, scale: Scale) -> _Group:
    names = _topic_names(rng.randint(*scale.topics))
    counts = {t: rng.randint(*scale.partitions) for t in names}
    group = _Group(counts, {})
    for _ in range(rng.randint(*scale.members)):
        topics = _subset(rng, names) if family == "mixed" else tuple(names)
        group.topics[group.new_member()] = topics
    return group


def _topics_for(group: _Group, rng: random.Random, family: str) -> tuple[str, ...]:
    existing = sorted(group.counts)
    if family in ("mixed", "rolling", "topics") and rng.random() < 0.5:
        return _subset(rng, existing)
    return next(iter(group.topics.values()), tuple(existing))


def _leave(group: _Group, member: str) -> None:
    del group.topics[member]
    group.owned.pop(member, None)


def _leave_join(
    group: _Group, rng: random.Random, scale: Scale, family: str = "leave-join"
) -> None:
    action = rng.choice(("leave", "join", "both"))
    if action in ("leave", "both") and len(group.topics) > 1:
        _leave(group, rng.choice(sorted(group.topics)))
    if action in ("join", "both") or len(group.topics) < 2:
        group.topics[group.new_member()] = _topics_for(group, rng, family)


def _bursts(group: _Group, rng: random.Random, scale: Scale) -> None:
    size = max(1, len(group.topics) // 3)
    for member in rng.sample(sorted(group.topics), min(size, len(group.topics) - 1)):
        _leave(group, member)
    for _ in range(rng.randint(0, size)):
        group.topics[group.new_member()] = _topics_for(group, rng, "bursts")


def _bounce(group: _Group, rng: random.Random, scale: Scale) -> None:
    member = rng.choice(sorted(group.topics))
    group.owned.pop(member, None)
    if rng.random() < 0.5:  # back under a new member id
        group.topics[group.new_member()] = group.topics.pop(member)


def _rolling(group: _Group, rng: random.Random, scale: Scale) -> None:
    for member in rng.sample(sorted(group.topics), min(2, len(group.topics))):
        group.topics[member] = _subset(rng, sorted(group.counts))


def _topics(group: _Group, rng: random.Random, scale: Scale) -> None:
    change = rng.choice(("grow", "create", "delete", "churn"))
    if change == "grow":
        topic = rng.choice(sorted(group.counts))
        group.counts[topic] += rng.randint(1, max(1, scale.partitions[1] // 2))
    elif change == "create" or (change == "delete" and len(group.counts) < 2):
        topic = next(t for t in _topic_names(26) if t not in group.counts)
        group.counts[topic] = rng.randint(*scale.partitions)
        for member in group.topics:
            if rng.random() < 0.6:
                group.topics[member] = tuple(sorted({*group.topics[member], topic}))
    elif change == "delete":
        del group.counts[rng.choice(sorted(group.counts))]  # members keep subscribing to it
    else:
        _leave_join(group, rng, scale, "topics")


def _zombie(group: _Group, rng: random.Random, scale: Scale) -> None:
    if group.zombies and rng.random() < 0.6:
        member = rng.choice(sorted(group.zombies))
        topics, claimed, generation = group.zombies.pop(member)
        group.topics[member] = topics
        group.returning[member] = (claimed, generation)
    elif len(group.topics) > 1:
        member = rng.choice(sorted(group.topics))
        group.zombies[member] = (
            group.topics.pop(member),
            group.owned.pop(member, ()),
            group.generation,
        )
    else:
        group.topics[group.new_member()] = _topics_for(group, rng, "zombie")


_CHANGES: dict[str, Callable[[_Group, random.Random, Scale], None]] = {
    "leave-join": _leave_join,
    "bursts": _bursts,
    "bounce": _bounce,
    "mixed": lambda group, rng, scale: _leave_join(group, rng, scale, "mixed"),
    "rolling": _rolling,
    "topics": _topics,
    "zombie": _zombie,
}
