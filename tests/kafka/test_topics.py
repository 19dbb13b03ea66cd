"""Topic creation and layout checks against the embedded broker."""

from __future__ import annotations

import pytest

from streamjoin.broker import Broker
from streamjoin.kafka.admin import BrokerUnreachable, open_admin
from streamjoin.kafka.topics import TopicLayoutError, TopicSpec, ensure_topics, partition_counts

pytestmark = pytest.mark.broker


async def test_creates_missing_topics_with_their_partition_counts(
    broker: Broker, unique: str
) -> None:
    specs = [
        TopicSpec(f"a-{unique}", 3),
        TopicSpec(f"b-{unique}", 8, {"cleanup.policy": "compact"}),
    ]
    assert await ensure_topics(broker.bootstrap, specs) == {f"a-{unique}": 3, f"b-{unique}": 8}
    async with open_admin(broker.bootstrap) as admin:
        counts = await partition_counts(admin)
    assert counts[f"a-{unique}"] == 3
    assert counts[f"b-{unique}"] == 8
    # Idempotent: a second call with the same layout is fine.
    await ensure_topics(broker.bootstrap, specs)


async def test_refuses_an_existing_topic_with_another_partition_count(
    broker: Broker, unique: str
) -> None:
    await ensure_topics(broker.bootstrap, [TopicSpec(f"c-{unique}", 2)])
    with pytest.raises(
        TopicLayoutError, match=rf"changelog 'c-{unique}' has 2 partitions, expected 4"
    ):
        await ensure_topics(broker.bootstrap, [TopicSpec(f"c-{unique}", 4, purpose="changelog")])


async def test_unreachable_broker_says_what_to_do() -> None:
    with pytest.raises(
        BrokerUnreachable, match=r"127\.0\.0\.1:1 \(connection refused\); .*streamjoin broker"
    ):
        async with open_admin("127.0.0.1:1", timeout_ms=1000):
            pass
