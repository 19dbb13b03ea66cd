"""Create the topics an app needs and check the ones that exist have the layout it expects.

Never ask the broker for metadata of one named topic that may not exist: brokers with
auto-creation (the embedded one among them) would create it with a default partition count.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import for_code

from streamjoin.errors import StreamJoinError
from streamjoin.kafka.admin import open_admin

__all__ = ("TopicLayoutError", "TopicSpec", "ensure_topics", "partition_counts")

logger = logging.getLogger(__name__)

_TOPIC_ALREADY_EXISTS = 36


class TopicLayoutError(StreamJoinError):
    """A topic exists with a layout (partition count) the application cannot use."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)
    purpose: str = "topic"
    """What the topic is for, used in error messages (e.g. "changelog of store 'joins'")."""


async def partition_counts(admin: AIOKafkaAdminClient) -> dict[str, int]:
    """Partition count of every topic in the cluster."""
    counts: dict[str, int] = {}
    for topic in await admin.describe_topics(None):
        if topic["error_code"] == 0:
            counts[topic["topic"]] = len(topic["partitions"])
    return counts


async def _create(admin: AIOKafkaAdminClient, specs: list[TopicSpec]) -> None:
    response = await admin.create_topics(
        [
            NewTopic(
                s.name,
                num_partitions=s.partitions,
                replication_factor=1,
                topic_configs=dict(s.config),
            )
            for s in specs
        ]
    )
    for name, code, *rest in response.topic_errors:
        if code not in (0, _TOPIC_ALREADY_EXISTS):
            message = rest[0] if rest and rest[0] else for_code(code).__name__
            raise TopicLayoutError(f"could not create topic {name!r}: {message}")
    for spec in specs:
        logger.info("created %s %r with %d partitions", spec.purpose, spec.name, spec.partitions)


async def ensure_topics(bootstrap: str, specs: Iterable[TopicSpec]) -> dict[str, int]:
    """Create missing topics; refuse existing ones whose partition count differs from the spec.

    Returns the partition count of every topic named in `specs`.
    """
    wanted = {spec.name: spec for spec in specs}
    async with open_admin(bootstrap) as admin:
        existing = await partition_counts(admin)
        wrong = [
            f"{spec.purpose} {name!r} has {existing[name]} partitions, expected {spec.partitions}"
            for name, spec in sorted(wanted.items())
            if name in existing and existing[name] != spec.partitions
        ]
        if wrong:
            raise TopicLayoutError(
                "; ".join(wrong) + ". Recreate the topic with the expected partition count, "
                "or change the application's topic settings to match"
            )
        missing = [spec for name, spec in sorted(wanted.items()) if name not in existing]
        if missing:
            await _create(admin, missing)
    return {name: spec.partitions for name, spec in wanted.items()}
