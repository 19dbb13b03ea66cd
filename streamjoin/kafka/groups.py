"""Describe a consumer group through the admin API (DescribeGroups), as `streamjoin plan
--from-group` and `streamjoin status` read a live group without joining it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import partition_counts

__all__ = ("GroupDescription", "Member", "describe_group", "describe_group_with")

_NO_ERROR = 0

Member = tuple[str, str, str, bytes, bytes]
"""DescribeGroups' member: id, client id, client host, metadata, assignment."""


@dataclass(frozen=True, slots=True)
class GroupDescription:
    state: str
    """Stable, PreparingRebalance, CompletingRebalance, Empty or Dead."""
    protocol_type: str
    protocol: str
    """The assignor the group selected."""
    members: Sequence[Member]
    topics: dict[str, int]
    """Every topic's partition count."""


async def describe_group(group: str, bootstrap: KafkaTarget) -> GroupDescription:
    """The group as the broker sees it now, and the cluster's partition counts."""
    async with open_admin(bootstrap) as admin:
        return await describe_group_with(admin, group)


async def describe_group_with(admin: AIOKafkaAdminClient, group: str) -> GroupDescription:
    """The same through an admin client already open (one kept across refreshes)."""
    responses = await admin.describe_consumer_groups([group])
    topics = await partition_counts(admin)
    error_code, _, state, protocol_type, protocol, members = responses[0].groups[0][:6]
    if error_code != _NO_ERROR:
        raise ConfigurationError(
            f"the broker refused to describe group {group!r}: error {error_code}"
        )
    return GroupDescription(state, protocol_type, protocol, members, topics)
