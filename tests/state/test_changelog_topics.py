"""Changelog topics are named `<app>-<store>-changelog`, created with the task's partition count
and a compacting config, and an existing one with another partition count is refused."""

from __future__ import annotations

import pytest
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streamjoin.broker import Broker
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.topics import TopicLayoutError, TopicSpec, ensure_topics, partition_counts
from streamjoin.state.changelog_topics import (
    WINDOW_CHANGELOG_EXTRA_RETENTION_MS,
    changelog_spec,
    changelog_topic,
    ensure_changelogs,
)
from streamjoin.state.specs import StoreSpec


def test_names_and_configs() -> None:
    assert changelog_topic("ads", "clicks-window") == "ads-clicks-window-changelog"
    assert changelog_spec("ads", StoreSpec.kv("users"), 8).config == {"cleanup.policy": "compact"}
    window = changelog_spec("ads", StoreSpec.window("w", retention_ms=5_000), 8)
    assert window.partitions == 8
    assert window.config == {
        "cleanup.policy": "compact,delete",
        "retention.ms": str(5_000 + WINDOW_CHANGELOG_EXTRA_RETENTION_MS),
    }


@pytest.mark.broker
async def test_missing_changelogs_are_created_with_their_configs(
    broker: Broker, unique: str
) -> None:
    app = f"app-{unique}"
    kv, window = StoreSpec.kv("table"), StoreSpec.window("win", retention_ms=1_000)
    await ensure_changelogs(broker.bootstrap, app, {kv: 3, window: 3})
    async with open_admin(broker.bootstrap) as admin:
        counts = await partition_counts(admin)
        described = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, changelog_topic(app, "win"))]
        )
    assert counts[changelog_topic(app, "table")] == 3
    assert counts[changelog_topic(app, "win")] == 3
    entries = {entry[0]: entry[1] for entry in described[0].resources[0][4]}
    assert entries["cleanup.policy"] == "compact,delete"


@pytest.mark.broker
async def test_an_existing_changelog_with_another_partition_count_is_refused(
    broker: Broker, unique: str
) -> None:
    app = f"app-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(changelog_topic(app, "table"), 3)])
    with pytest.raises(
        TopicLayoutError,
        match=rf"changelog of store 'table' '{app}-table-changelog' has 3 partitions, expected 8",
    ):
        await ensure_changelogs(broker.bootstrap, app, {StoreSpec.kv("table"): 8})
