"""The leader's step of a rebalance: members' metadata in, every member's encoded assignment out.

Decode each member's subscription, run the group's selected assignor, put its output through the
cooperative step when the generation is COOPERATIVE (harmless for assignors that already apply
it: the step is idempotent), and encode one assignment per member.

The leader never fails because of one member's bytes. A member whose subscription cannot be
decoded is logged by id and given an empty assignment for this generation (it stays in the group,
which the broker requires, and its partitions go to the others); since it owns nothing in the
leader's view, nothing is withheld for it. An assignor that fails on the members' user data is
retried once with all user data dropped, which every assignor must accept (it then assigns from
the owned partitions alone).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamjoin.assignment.consumer.consumer_protocol import (
    LATEST_VERSION,
    decode_subscription,
    encode_assignment,
)
from streamjoin.assignment.consumer.cooperative import cooperative_step
from streamjoin.assignment.model import (
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
)
from streamjoin.errors import ProtocolDecodeError
from streamjoin.group.coordinator import JoinedMember
from streamjoin.group.errors import GroupError

__all__ = ("DecodedMembers", "assign_members", "decode_members")

logger = logging.getLogger(__name__)

_VERSION = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class DecodedMembers:
    subscriptions: dict[str, Subscription]
    """Members whose metadata decoded, by member id."""
    versions: dict[str, int]
    """Consumer protocol version to answer each member in (its subscription's, at most 3)."""
    undecodable: tuple[str, ...]
    """Members whose metadata did not decode: they get an empty assignment."""

    @property
    def topics(self) -> frozenset[str]:
        """Every topic some member subscribes to (the leader needs their partition counts)."""
        return frozenset(t for s in self.subscriptions.values() for t in s.topics)


def _version(metadata: bytes) -> int:
    if len(metadata) < _VERSION.size:
        return 0
    version: int = _VERSION.unpack_from(metadata)[0]
    return min(max(version, 0), LATEST_VERSION)


def decode_members(group_id: str, members: Iterable[JoinedMember]) -> DecodedMembers:
    """Decode every member's subscription; log and set aside the ones that do not decode."""
    subscriptions: dict[str, Subscription] = {}
    versions: dict[str, int] = {}
    undecodable: list[str] = []
    for member in members:
        versions[member.member_id] = _version(member.metadata)
        try:
            subscriptions[member.member_id] = decode_subscription(member.metadata)
        except ProtocolDecodeError as exc:
            logger.error(
                "group %s: member %s sent a subscription the leader cannot decode (%s, %d bytes); "
                "it gets no partitions in this generation",
                group_id,
                member.member_id,
                exc,
                len(member.metadata),
            )
            undecodable.append(member.member_id)
    return DecodedMembers(subscriptions, versions, tuple(sorted(undecodable)))


def _run_assignor(
    group_id: str,
    assignor: PartitionAssignor,
    partition_counts: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
) -> GroupAssignment:
    try:
        return assignor.assign(partition_counts, subscriptions)
    except Exception as exc:  # noqa: BLE001 - an assignor bug must not take the leader down
        logger.error(
            "group %s: assignor %r failed (%s: %s); retrying without the members' user data",
            group_id,
            assignor.name,
            type(exc).__name__,
            exc,
        )
    stripped = {
        member: Subscription(s.topics, b"", s.owned_partitions, s.generation, s.rack)
        for member, s in subscriptions.items()
    }
    try:
        return assignor.assign(partition_counts, stripped)
    except Exception as exc:
        raise GroupError(
            f"group {group_id}: assignor {assignor.name!r} failed even without user data "
            f"({type(exc).__name__}: {exc}); this is a bug in the assignor"
        ) from exc


def assign_members(
    group_id: str,
    assignor: PartitionAssignor,
    protocol: RebalanceProtocol,
    decoded: DecodedMembers,
    partition_counts: Mapping[str, int],
) -> dict[str, bytes]:
    """Every member's encoded assignment for SyncGroup (one per member, possibly empty)."""
    subscriptions = decoded.subscriptions
    counts = {topic: n for topic, n in partition_counts.items() if topic in decoded.topics}
    missing = sorted(decoded.topics - counts.keys())
    if missing:
        logger.warning(
            "group %s: subscribed topics %s do not exist; nothing of them is assigned",
            group_id,
            missing,
        )
    target = _run_assignor(group_id, assignor, counts, subscriptions) if subscriptions else {}
    assignment = {member: target.get(member, Assignment(())) for member in subscriptions}
    if protocol is RebalanceProtocol.COOPERATIVE:
        step = cooperative_step(
            assignment, {member: s.owned_partitions for member, s in subscriptions.items()}
        )
        assignment = step.assignment
        if step.needs_follow_up:
            logger.info(
                "group %s: %d partitions revoked now, %d handed over in the follow-up rebalance",
                group_id,
                sum(len(p) for p in step.revoked.values()),
                sum(len(p) for p in step.pending.values()),
            )
    for member in decoded.undecodable:
        assignment[member] = Assignment(())
    return {
        member: encode_assignment(given, decoded.versions.get(member, 0))
        for member, given in sorted(assignment.items())
    }
