"""A task's changelog holds its state whatever the records' timestamps: history stamped 30 days
back is processed, Apache Kafka's log cleaner applies the window changelog's retention (store
retention + 1 day), the task moves to another worker, and that worker restores all of it.

Seen before the fix: the changelog records carried the event times, so the cleaner's first pass
after they were written emptied the changelog and the new owner restored nothing.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import harness
import pytest
from aiokafka import TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.connection import connect
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import log_bounds
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.changelog_topics import changelog_spec, changelog_topic
from streamjoin.state.specs import StoreSpec

pytestmark = [pytest.mark.broker, pytest.mark.slow]

DAY_MS = 86_400_000
PER_PARTITION = 200
CLEANER_PASS_S = 120.0
"""Kafka's log cleaner applies the retention of `compact,delete` topics each time it wakes (every
second when idle on the suite's broker, `log.cleaner.backoff.ms`): generous for a loaded machine."""


async def _log_start(bootstrap: str, topic: str) -> int:
    [bounds] = await log_bounds(bootstrap, [TopicPartition(topic, 0)])
    return bounds.start


async def _cleaner_passes(bootstrap: str, canary: str, passes: int) -> None:
    """Return once the cleaner has run `passes` times since the call: each time, a record
    stamped 30 days back goes to `canary` (retention as a window changelog's) and the test
    waits until the cleaner has deleted it. The second pass began after the first ended, so it
    saw every changelog record written before the call."""
    producer = connect(bootstrap).producer()
    await producer.start()
    try:
        for _ in range(passes):
            before = await _log_start(bootstrap, canary)
            stamp = int(time.time() * 1000) - 30 * DAY_MS
            await producer.send_and_wait(canary, b"old", key=b"k", timestamp_ms=stamp)
            deadline = time.monotonic() + CLEANER_PASS_S
            while await _log_start(bootstrap, canary) <= before:
                assert time.monotonic() < deadline, f"no cleaner pass on {canary} in time"
                await asyncio.sleep(0.5)
    finally:
        await producer.stop()


async def test_history_30_days_old_is_restored_in_full_by_the_next_owner(
    kafka_broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = kafka_broker.bootstrap
    app = harness.make_app(unique, acceptable_recovery_lag=0)
    parts = harness.PARTITIONS
    await ensure_topics(bs, [TopicSpec(f"{t}-{unique}", parts) for t in ("imp", "clk", "out")])
    # A topic the cleaner treats as it treats the window changelog (same config).
    window = StoreSpec.window("canary", retention_ms=3_600_000)
    canary = f"canary-{unique}"
    await ensure_topics(bs, [TopicSpec(canary, 1, changelog_spec(app.app_id, window, 1).config)])
    history = int(time.time() * 1000) - 30 * DAY_MS
    auctions = range(parts * PER_PARTITION)
    tasks = {TaskId("attribute", p) for p in range(parts)}
    changelog = changelog_topic(app.app_id, "attribute-left")

    first, second = (
        harness.Running(app, bs, tmp_path / "w1"),
        harness.Running(app, bs, tmp_path / "w2"),
    )
    async with harness.workers(first, second):
        await first.start()
        await harness.until(lambda: first.running_tasks() == tasks, 60, "first worker runs both")
        await harness.send(bs, f"imp-{unique}", auctions, ts0=history)
        changelog_partitions = [TopicPartition(changelog, p) for p in range(parts)]

        async def in_changelog() -> int:
            return sum(b.end - b.start for b in await log_bounds(bs, changelog_partitions))

        deadline = time.monotonic() + 60
        while (logged := await in_changelog()) < len(auctions):
            assert time.monotonic() < deadline, f"{logged} impressions in {changelog}"
            await asyncio.sleep(0.5)

        await _cleaner_passes(bs, canary, passes=2)
        kept = await in_changelog()
        assert kept == len(auctions), f"the cleaner left {kept} of {len(auctions)} records"

        await first.stop()
        await second.start()
        await harness.until(lambda: second.running_tasks() == tasks, 60, "second worker runs both")
        restored = {task: second.restored.get(str(task)) for task in tasks}
        assert restored == dict.fromkeys(tasks, PER_PARTITION), "every impression restored"

        # Clicks a minute after their impressions join the restored state.
        await harness.send(bs, f"clk-{unique}", auctions, ts0=history + 60_000)
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        while seen != set(auctions) and time.monotonic() < deadline:
            seen = await harness.joined(bs, f"out-{unique}")
        assert seen == set(auctions), f"{len(seen)} of {len(auctions)} clicks joined"
