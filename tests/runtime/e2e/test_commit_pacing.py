"""On live traffic a worker sends its changelog writes between commits (runtime/process/pacing.py),
so that a commit has little left to send: before, every write of a commit interval went out at
the commit, at once, and the outputs waited behind them (issue 40, item 5).

Seen before the change: with a commit interval longer than the test, nothing reached the
changelogs until the commit, and the wait below ran out.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import harness
import pytest
from aiokafka import TopicPartition
from test_revoke_delivery import committed_offsets

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import log_bounds
from streamjoin.state.changelog_topics import changelog_topic

pytestmark = [pytest.mark.broker, pytest.mark.slow]

IMPRESSIONS = 40


async def _changelog_records(bootstrap: str, topic: str) -> int:
    bounds = await log_bounds(
        bootstrap, [TopicPartition(topic, p) for p in range(harness.PARTITIONS)]
    )
    return sum(b.end - b.start for b in bounds)


async def test_a_live_worker_logs_its_state_between_commits(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    app = harness.make_app(unique)
    await ensure_topics(
        bs, [TopicSpec(f"{t}-{unique}", harness.PARTITIONS) for t in ("imp", "clk", "out")]
    )
    changelog = changelog_topic(app.app_id, "attribute-left")
    # No periodic commit in this test's time: whatever reaches the changelog was flushed.
    running = harness.Running(app, bs, tmp_path / "w", commit_interval_s=600)
    async with harness.workers(running):
        await running.start()
        await harness.until(lambda: len(running.running_tasks()) == 2, 60, "both tasks run")
        await harness.send(bs, f"imp-{unique}", range(IMPRESSIONS))
        manager = running.worker.manager
        assert manager is not None
        await harness.until(
            lambda: sum(manager.records_in.values()) == IMPRESSIONS, 60, "impressions processed"
        )
        deadline = time.monotonic() + 60
        while (logged := await _changelog_records(bs, changelog)) < IMPRESSIONS:
            assert time.monotonic() < deadline, f"{logged} of {IMPRESSIONS} writes logged"
            await asyncio.sleep(0.2)
        assert logged == IMPRESSIONS, f"{logged} of {IMPRESSIONS} writes in the changelog"
        offsets = await committed_offsets(bs, app.app_id)
        assert all(o < 0 for o in offsets.values()), f"committed meanwhile: {offsets}"
