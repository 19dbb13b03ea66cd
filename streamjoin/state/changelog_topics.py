"""Changelog topics: their names, their configs, and creating or checking them on the broker."""

from __future__ import annotations

from collections.abc import Mapping

from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.state.specs import StoreKind, StoreSpec, check_name

__all__ = (
    "WINDOW_CHANGELOG_EXTRA_RETENTION_MS",
    "changelog_spec",
    "changelog_topic",
    "ensure_changelogs",
    "store_topic",
)

WINDOW_CHANGELOG_EXTRA_RETENTION_MS = 86_400_000
"""A window changelog keeps records one day longer than the store (as Kafka Streams), so that
a restore never misses a record the store would still hold. The broker counts from each
record's timestamp, which is when the store logged it (window_store.py), not its event time:
history older than the retention stays until a day after it was processed."""


def changelog_topic(app_id: str, store: str) -> str:
    return f"{check_name('application id', app_id)}-{check_name('store', store)}-changelog"


def store_topic(app_id: str, store: StoreSpec) -> str:
    """The topic a store restores from: its table's source topic, else its changelog."""
    return store.source_topic or changelog_topic(app_id, store.name)


def changelog_spec(app_id: str, store: StoreSpec, partitions: int) -> TopicSpec:
    """Compacted for key-value stores; compacted and time-limited for window stores."""
    if store.kind is StoreKind.KEY_VALUE:
        config = {"cleanup.policy": "compact"}
    else:
        config = {
            "cleanup.policy": "compact,delete",
            "retention.ms": str(store.retention_ms + WINDOW_CHANGELOG_EXTRA_RETENTION_MS),
        }
    return TopicSpec(
        changelog_topic(app_id, store.name),
        partitions,
        config,
        purpose=f"changelog of store {store.name!r}",
    )


async def ensure_changelogs(
    bootstrap: KafkaTarget, app_id: str, stores: Mapping[StoreSpec, int]
) -> None:
    """Create missing changelogs (store -> partition count); raise TopicLayoutError, naming the
    topic and both counts, if an existing one has another partition count. A store restored
    from its source topic has no changelog of its own."""
    await ensure_topics(
        bootstrap,
        [
            changelog_spec(app_id, store, partitions)
            for store, partitions in stores.items()
            if store.source_topic is None
        ],
    )
