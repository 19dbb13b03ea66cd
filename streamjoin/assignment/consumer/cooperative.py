"""The incremental cooperative rule (KIP-429), as a step any assignor's output can go through.

Under COOPERATIVE rebalancing members keep consuming what they own while the group rebalances. A
partition must therefore never be handed to its new owner while another member still holds it:
the step withholds it, the old owner sees that its new assignment lacks the partition and revokes
it, and then asks for a follow-up rebalance in which the partition is free and goes to the new
owner. Partitions nobody else owns are handed out at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain

from streamjoin.assignment.model import (
    Assignment,
    GroupAssignment,
    TopicPartition,
    sorted_partitions,
)

__all__ = ("CooperativeStep", "cooperative_step")


@dataclass(frozen=True, slots=True)
class CooperativeStep:
    """The outcome of one cooperative rebalance, for the leader and for reports."""

    assignment: GroupAssignment
    """What each member gets now."""
    revoked: dict[str, tuple[TopicPartition, ...]]
    """Per member, the owned partitions its new assignment drops: it revokes them now."""
    pending: dict[str, tuple[TopicPartition, ...]]
    """Per member, partitions withheld now because another member still owns them; the
    follow-up rebalance hands them over."""

    @property
    def needs_follow_up(self) -> bool:
        return bool(self.pending)

    def target(self) -> GroupAssignment:
        """The assignment once the follow-up rebalance has handed over the pending partitions."""
        return {
            member: Assignment(
                sorted_partitions((*given.partitions, *self.pending.get(member, ()))),
                given.user_data,
            )
            for member, given in self.assignment.items()
        }


def cooperative_step(
    target: GroupAssignment,
    owned: Mapping[str, Iterable[TopicPartition]],
) -> CooperativeStep:
    """Withhold from each member of `target` the partitions another member still owns.

    `target` is the assignment the group should end up with; `owned[member]` is what that member
    owns now (the `owned_partitions` of its subscription; members missing from `owned` own
    nothing). Ownership reported for a member that is not in `target` is ignored: that member
    has left the group, so its partitions are free. Every member's user data is kept.
    """
    reported = {member: tuple(owned.get(member, ())) for member in sorted(target)}
    anyone_owns = any(reported.values())
    # Only members whose target differs from what they own gain anything; what they gain is
    # checked against every claim in one pass, without a set of all 100,000 claims.
    gained: dict[str, frozenset[TopicPartition]] = {}
    for member, claimed in reported.items():
        given = target[member]
        # Nobody owning anything: nobody gains what another owns (and a compact target stays
        # compact, see Assignment).
        if (claimed or anyone_owns) and given.partitions != claimed:
            gained[member] = frozenset(given.partitions).difference(claimed)
    any_gained: set[TopicPartition] = set().union(*gained.values())
    owned_elsewhere = (
        any_gained.intersection(chain.from_iterable(reported.values())) if any_gained else set()
    )
    assignment: GroupAssignment = {}
    revoked: dict[str, tuple[TopicPartition, ...]] = {}
    pending: dict[str, tuple[TopicPartition, ...]] = {}
    for member, claimed in reported.items():
        given = target[member]
        if member not in gained:
            assignment[member] = given  # keeps exactly what it owns, or nobody owns anything
            continue
        withheld = gained[member] & owned_elsewhere
        if withheld:
            now = tuple(tp for tp in given.partitions if tp not in withheld)
            pending[member] = tuple(tp for tp in given.partitions if tp in withheld)
            assignment[member] = Assignment(now, given.user_data)
        else:
            assignment[member] = given
        dropped = frozenset(claimed).difference(given.partitions)
        if dropped:
            revoked[member] = sorted_partitions(dropped)
    return CooperativeStep(assignment, revoked, pending)
