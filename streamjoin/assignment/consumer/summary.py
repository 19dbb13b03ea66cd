"""Checks and figures for an assignment: validity, KIP-54 balance, and what moved.

Used by `streamjoin plan` to tell an operator what a rebalance would do, and by the benchmark to
compare assignors on the same input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.consumer.topic_layout import topic_partitions
from streamjoin.assignment.model import GroupAssignment, TopicPartition

__all__ = ("Movement", "balance", "is_balanced", "movement", "problems")

_MAX_PROBLEMS = 20


def is_balanced(assignment: GroupAssignment, eligible: Mapping[str, Iterable[str]]) -> bool:
    """KIP-54's definition: counts differ by at most one, or no partition could move to a
    member that can consume its topic and holds two or more fewer partitions."""
    loads = {member: len(a.partitions) for member, a in assignment.items()}
    if not loads or max(loads.values()) - min(loads.values()) <= 1:
        return True
    least: dict[str, int] = {}  # topic -> lowest load among the members that can consume it
    for member, topics in eligible.items():
        for topic in topics:
            least[topic] = min(least.get(topic, loads[member]), loads[member])
    for member, given in assignment.items():
        limit = loads[member] - 2
        for topic in {tp.topic for tp in given.partitions}:
            if least.get(topic, limit + 1) <= limit:
                return False
    return True


def balance(assignment: GroupAssignment, eligible: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    counts = [len(a.partitions) for a in assignment.values()]
    low, high = min(counts, default=0), max(counts, default=0)
    return {
        "min": low,
        "max": high,
        "spread": high - low,
        "balanced": is_balanced(assignment, eligible),
    }


def problems(
    assignment: GroupAssignment,
    partitions_per_topic: Mapping[str, int],
    eligible: Mapping[str, Iterable[str]],
    *,
    complete: bool,
    co_partitioned: bool,
) -> list[str]:
    """What makes the assignment invalid, worst first; empty if it is valid.

    Always: a partition goes to at most one member, only to a member subscribed to its topic,
    and exists. `complete`: every partition of a subscribed topic is assigned. `co_partitioned`:
    each partition number has one owner across all topics.
    """
    found: list[str] = []
    owner: dict[TopicPartition, str] = {}
    number_owner: dict[int, str] = {}
    for member in sorted(assignment):
        topics = frozenset(eligible.get(member, ()))
        for tp in assignment[member].partitions:
            if not 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0):
                found.append(f"{tp.topic}-{tp.partition} does not exist but went to {member}")
            elif tp in owner:
                found.append(f"{tp.topic}-{tp.partition} went to both {owner[tp]} and {member}")
            elif tp.topic not in topics:
                found.append(f"{tp.topic}-{tp.partition} went to {member}, not subscribed to it")
            owner.setdefault(tp, member)
            if co_partitioned and number_owner.setdefault(tp.partition, member) != member:
                other = number_owner[tp.partition]
                found.append(f"partition number {tp.partition} went to both {other} and {member}")
    if complete:
        subscribed = sorted({t for topics in eligible.values() for t in topics})
        for topic in subscribed:
            for tp in topic_partitions(topic, partitions_per_topic.get(topic, 0)):
                if tp not in owner:
                    found.append(f"{topic}-{tp.partition} is not assigned")
    if len(found) > _MAX_PROBLEMS:
        found[_MAX_PROBLEMS:] = [f"... and {len(found) - _MAX_PROBLEMS} more"]
    return found


@dataclass(slots=True)
class Movement:
    """Where previously owned partitions went, compared with an assignment."""

    kept: int = 0
    """Stayed with a member that owned it."""
    moved: int = 0
    """Went to a member that did not own it."""
    released: int = 0
    """Owned before, assigned to nobody now."""
    new: int = 0
    """Owned by nobody before, assigned now."""
    moves: list[tuple[TopicPartition, tuple[str, ...], str]] = field(default_factory=list)
    """(partition, previous owners, new owner) of every move, in partition order."""


def movement(
    assignment: GroupAssignment, owned: Mapping[str, Iterable[TopicPartition]]
) -> Movement:
    """Compare `assignment` with what members owned before (members absent from `assignment`
    have left; their partitions count as moved or released)."""
    owners: dict[TopicPartition, list[str]] = {}
    for member in sorted(owned):
        for tp in set(owned[member]):
            owners.setdefault(tp, []).append(member)
    result = Movement()
    taken: set[TopicPartition] = set()
    for member, given in assignment.items():
        for tp in given.partitions:
            taken.add(tp)
            before = owners.get(tp)
            if before is None:
                result.new += 1
            elif member in before:
                result.kept += 1
            else:
                result.moved += 1
                result.moves.append((tp, tuple(before), member))
    result.released = sum(1 for tp in owners if tp not in taken)
    result.moves.sort()
    return result
