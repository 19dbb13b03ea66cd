"""The worker end to end on the embedded broker: several `streamjoin worker` processes share the
tasks; every joined record arrives, even when one worker is killed -9 under load."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
import worker_processes as processes

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]


Workers, produce, read_joined = processes.Workers, processes.produce, processes.read_joined
_topics = processes.make_topics


async def test_two_workers_join_every_pair(broker: Broker, unique: str, tmp_path: Path) -> None:
    await _topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    workers.start("w2")
    try:
        await produce(broker.bootstrap, unique, range(2_000), pace_s=0)
        seen = await read_joined(broker.bootstrap, unique, 2_000, within_s=60)
    finally:
        codes = workers.stop_all()
    assert len(seen) == 2_000, workers.logs()
    assert codes == {"w1": 0, "w2": 0}, workers.logs()


async def test_kill_9_under_load_loses_no_joined_record(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await _topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    workers.start("w2")
    try:
        producing = asyncio.create_task(
            produce(broker.bootstrap, unique, range(6_000), pace_s=0.12)
        )
        await asyncio.sleep(7)
        assert not producing.done(), "the kill must happen under load"
        workers.signal("w1", signal.SIGKILL)
        await producing
        seen = await read_joined(broker.bootstrap, unique, 6_000, within_s=90)
    finally:
        workers.stop_all()
    missing = sorted(set(range(6_000)) - seen.keys())
    duplicates = sum(n - 1 for n in seen.values())
    print(f"kill -9: 6000 expected, {len(missing)} missing, {duplicates} duplicates")
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"


@pytest.mark.parametrize("memory", [None, "24MiB"])
async def test_a_worker_started_on_a_backlog_joins_every_pair(
    broker: Broker, unique: str, tmp_path: Path, memory: str | None
) -> None:
    """Both topics already hold their records when the worker starts: neither side may run so
    far ahead of the other that the other's records become late. With a 24 MiB budget the
    records waiting in the input buffers may take 1.5 MiB, about 9,000 of these: fetching
    pauses and resumes all along, and no side may wait for records that are never fetched."""
    await _topics(broker.bootstrap, unique)
    await produce(broker.bootstrap, unique, range(30_000), pace_s=0)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1", *(["--memory", memory] if memory else []))
    try:
        seen = await read_joined(broker.bootstrap, unique, 30_000, within_s=120)
    finally:
        workers.stop_all()
    missing = 30_000 - len(seen)
    assert not missing, f"{missing} pairs missing\n{workers.logs()}"
