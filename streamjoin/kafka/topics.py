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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import for_code

from streamjoin.errors import ConfigurationError, StreamJoinError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget

__all__ = (
    "TopicLayoutError",
    "TopicSpec",
    "create_topics",
    "ensure_topics",
    "led_partition_counts",
    "partition_counts",
    "topic_config",
)

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


async def led_partition_counts(admin: AIOKafkaAdminClient) -> dict[str, int]:
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
        counts = await led_partition_counts(admin)
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


async def ensure_topics(kafka: KafkaTarget, specs: Iterable[TopicSpec]) -> dict[str, int]:
    """Create missing topics; refuse existing ones whose partition count differs from the spec.

    Returns the partition count of every topic named in `specs`.
    """
    wanted = {spec.name: spec for spec in specs}
    async with open_admin(kafka) as admin:
        existing = await partition_counts(admin)
        _check_layout(wanted, existing)
        missing = [spec for name, spec in sorted(wanted.items()) if name not in existing]
        if missing:
            await _create(admin, missing)
            # A topic that "already exists" was made meanwhile by someone else: check it too.
            _check_layout(wanted, await _wait_until_led(admin, {s.name for s in missing}))
    return {name: spec.partitions for name, spec in wanted.items()}


async def create_topics(
    kafka: KafkaTarget, specs: Sequence[TopicSpec], *, if_not_exists: bool = False
) -> dict[str, int]:
    """Create every topic of `specs` or none: bad partition counts and existing topics are
    refused before anything is created (unlike `ensure_topics`, which accepts existing ones).
    With `if_not_exists`, existing topics are left as they are instead. Returns the partition
    count of each topic that existed already."""
    bad = [f"{s.name!r}: {s.partitions}" for s in specs if s.partitions < 1]
    if bad:
        raise ConfigurationError(f"a topic needs at least 1 partition ({', '.join(bad)})")
    async with open_admin(kafka) as admin:
        existing = await partition_counts(admin)
        found = {s.name: existing[s.name] for s in specs if s.name in existing}
        if found and not if_not_exists:
            taken = ", ".join(f"{name!r} ({count} partitions)" for name, count in found.items())
            raise TopicLayoutError(f"topic {taken} already exists at {kafka}; nothing created")
        missing = [s for s in specs if s.name not in found]
        if missing:
            await _create(admin, missing)
            await _wait_until_led(admin, {s.name for s in missing})
    return found


_DEFAULT_SOURCES = (4, 5)
"""DescribeConfigs sources STATIC_BROKER_CONFIG and DEFAULT_CONFIG: not set on the topic."""


async def topic_config(admin: AIOKafkaAdminClient, topic: str) -> dict[str, tuple[str, bool]]:
    """`topic`'s configuration as the broker reports it: name -> (value, is a default)."""
    responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    config: dict[str, tuple[str, bool]] = {}
    for response in responses:
        for error_code, error_message, _kind, _name, entries in response.resources:
            if error_code:
                raise StreamJoinError(
                    f"cannot describe the configuration of topic {topic!r}: "
                    f"{error_message or for_code(error_code).__name__}"
                )
            for name, value, _read_only, source, *_ in entries:
                # Version 0 answers is_default (a bool) where later versions answer the source.
                default = source is True or (type(source) is int and source in _DEFAULT_SOURCES)
                if value is not None:
                    config[name] = (value, default)
    return config
