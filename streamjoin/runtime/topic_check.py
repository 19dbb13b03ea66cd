"""At start-up: check that every join's inputs exist and are co-partitioned, and create the
output and dead-letter topics. Refuses with a message naming the topics and their counts."""

from __future__ import annotations

import logging

from streamjoin.dsl.app import App
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts
from streamjoin.runtime.dead_letters import dead_letter_topic

__all__ = ("check_topics",)

logger = logging.getLogger(__name__)


def _join_partitions(app: App, counts: dict[str, int]) -> dict[str, int]:
    problems: list[str] = []
    partitions: dict[str, int] = {}
    for spec in app.joins:
        where = f"join {spec.name!r}"
        missing = [t for t in (spec.left, spec.right) if t.name not in counts]
        sides = (spec.left, spec.right)
        known = [t.partitions for t in sides if t.partitions] + [
            counts[t.name] for t in sides if t.name in counts
        ]
        for topic in missing:
            problems.append(
                f"{where}: input topic {topic.name!r} does not exist; create it with "
                f"`streamjoin topics create {topic.name} --partitions "
                f"{topic.partitions or (known[0] if known else 'N')}` (as many partitions as "
                "its other side), or start the worker with --create-topics"
            )
        if missing:
            continue
        left, right = counts[spec.left.name], counts[spec.right.name]
        if left != right:
            problems.append(
                f"{where}: inputs are not co-partitioned: {spec.left.name!r} has {left} "
                f"partitions, {spec.right.name!r} has {right}; give both the same partition "
                "count and partition them by the same key"
            )
            continue
        for topic in (spec.left, spec.right):
            if topic.partitions is not None and topic.partitions != counts[topic.name]:
                problems.append(
                    f"{where}: topic {topic.name!r} is declared with {topic.partitions} "
                    f"partitions but has {counts[topic.name]}"
                )
        partitions[spec.name] = left
    if problems:
        raise ConfigurationError("; ".join(problems))
    return partitions


async def check_topics(app: App, bootstrap: str) -> dict[str, int]:
    """Partition count of each join (its task count), after creating missing output topics
    (as many partitions as the join's inputs) and the dead-letter topic."""
    if not app.joins:
        raise ConfigurationError(f"app {app.app_id!r} declares no joins: nothing to run")
    async with open_admin(bootstrap) as admin:
        counts = await partition_counts(admin)
    partitions = _join_partitions(app, counts)
    outputs: dict[str, TopicSpec] = {}
    for spec in app.joins:
        count = partitions[spec.name]
        existing = counts.get(spec.into.name)
        if existing is not None and existing != count:
            logger.warning(
                "output topic %r has %d partitions, join %r has %d: results are partitioned by "
                "key, not by task",
                spec.into.name,
                existing,
                spec.name,
                count,
            )
            continue
        outputs[spec.into.name] = TopicSpec(
            spec.into.name, spec.into.partitions or count, purpose="output topic"
        )
    dlq = dead_letter_topic(app.app_id)
    if dlq not in counts:
        outputs[dlq] = TopicSpec(dlq, max(partitions.values()), purpose="dead-letter topic")
    await ensure_topics(bootstrap, outputs.values())
    return partitions
