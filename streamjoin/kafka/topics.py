"""Create the topics an app needs and check the ones that exist have the layout it expects.

Never ask the broker for metadata of one named topic that may not exist: brokers with
auto-creation (the embedded one among them) would create it with a default partition count.
Apache Kafka answers CreateTopics before its metadata shows the topic (or its partitions have
leaders): creation waits until they do, so a caller can produce, and a second `ensure_topics`
sees the topic's real layout instead of creating it again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import for_code

from streamjoin.errors import StreamJoinError
from streamjoin.kafka.admin import open_admin

__all__ = ("TopicLayoutError", "TopicSpec", "ensure_topics", "partition_counts")

logger = logging.getLogger(__name__)

_TOPIC_ALREADY_EXISTS = 36
_READY_TIMEOUT_S = 30.0
_READY_POLL_S = 0.05


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


async def _led_partition_counts(admin: AIOKafkaAdminClient) -> dict[str, int]:
    """Partition count of every topic whose partitions all have a leader (can take records)."""
    return {
        topic["topic"]: len(topic["partitions"])
        for topic in await admin.describe_topics(None)
        if topic["error_code"] == 0
        and topic["partitions"]
        and all(p["error_code"] == 0 and p["leader"] >= 0 for p in topic["partitions"])
    }


async def _wait_until_led(admin: AIOKafkaAdminClient, names: set[str]) -> dict[str, int]:
    """Partition counts of `names` once the broker's metadata shows each with leaders."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while True:
        counts = await _led_partition_counts(admin)
        if names <= counts.keys():
            return counts
        if time.monotonic() > deadline:
            raise TopicLayoutError(
                f"topics {sorted(names - counts.keys())} were created but have no leader after "
                f"{_READY_TIMEOUT_S:g} s: check the broker's log"
            )
        await asyncio.sleep(_READY_POLL_S)


def _check_layout(wanted: Mapping[str, TopicSpec], existing: Mapping[str, int]) -> None:
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
        _check_layout(wanted, existing)
        missing = [spec for name, spec in sorted(wanted.items()) if name not in existing]
        if missing:
            await _create(admin, missing)
            # A topic that "already exists" was made meanwhile by someone else: check it too.
            _check_layout(wanted, await _wait_until_led(admin, {s.name for s in missing}))
    return {name: spec.partitions for name, spec in wanted.items()}
