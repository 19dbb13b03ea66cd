"""At start-up: compile the app's topology against the broker's topics (every input exists, the
joins' inputs are co-partitioned), and create the output, repartition and dead-letter topics.
Refuses with a message naming the topics and their counts."""

from __future__ import annotations

import logging

from streamjoin.dsl.app import App
from streamjoin.dsl.topology import Topology, compile_topology
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts
from streamjoin.runtime.output.dead_letters import dead_letter_topic

__all__ = ("check_running_topics", "check_topics")

logger = logging.getLogger(__name__)


def check_running_topics(app: App, counts: dict[str, int], started: Topology) -> None:
    """While the worker runs: every topic it read or wrote at start still exists, and every
    sub-topology has the task count it was started with (`started`, from `check_topics`);
    raises ConfigurationError."""
    gone = sorted(topic for topic in started.partitions if topic not in counts)
    if gone:
        raise ConfigurationError(
            f"the broker no longer has the app's topics {', '.join(map(repr, gone))} (deleted, "
            "or a broker that came back without its data); nothing more is processed or "
            "committed: bring the broker's data back, or create the topics again and restart "
            "the workers"
        )
    now = compile_topology(app, counts)
    changed = [
        f"{name!r} was started with {count} partitions, its inputs now have {now.tasks[name]}"
        for name, count in sorted(started.tasks.items())
        if now.tasks.get(name, count) != count
    ]
    if changed:
        raise ConfigurationError(
            "; ".join(changed) + "; restart the workers so that their tasks match the partitions"
        )


async def check_topics(app: App, bootstrap: KafkaTarget) -> Topology:
    """The app's topology with the partition count of every topic, after creating missing
    output, repartition and dead-letter topics; refuses inputs that are missing or not
    co-partitioned as the joins see them (after repartitioning)."""
    async with open_admin(bootstrap) as admin:
        counts = await partition_counts(admin)
    topology = compile_topology(app, counts)
    partitions = topology.partitions
    outputs: dict[str, TopicSpec] = {}
    internal = app.foreign_key_topics
    for topic in internal:
        outputs[topic] = TopicSpec(
            topic, _known(partitions[topic]), purpose="internal topic of a foreign-key join"
        )
    for spec in topology.joins:
        if spec.into.name in internal:
            continue
        count = topology.tasks[spec.name]
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
            spec.into.name, _known(partitions[spec.into.name]), purpose="output topic"
        )
    for repartition in topology.repartitions:
        name = repartition.topic.name
        outputs[name] = TopicSpec(
            name,
            _known(partitions[name]),
            # Kept until consumed and purged (DeleteRecords after each commit), never by age:
            # records re-keyed from history (old timestamps) must not expire before they are
            # read (Kafka Streams' repartition topics, KIP-284).
            {"cleanup.policy": "delete", "retention.ms": "-1"},
            purpose=f"repartition topic of key_by {repartition.name!r}",
        )
    dlq = dead_letter_topic(app.app_id)
    if dlq not in counts:
        most = max(_known(c) for c in topology.tasks.values())
        outputs[dlq] = TopicSpec(dlq, most, purpose="dead-letter topic")
    await ensure_topics(bootstrap, outputs.values())
    return topology


def _known(count: int | None) -> int:
    assert count is not None, "compiled with require_sources: every count is known"
    return count
