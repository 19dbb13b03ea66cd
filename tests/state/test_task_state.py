"""Task lifecycles on the embedded broker: suspend and resume without a restore, standbys that
follow their active, promotion of a standby, offset sums, and a failed changelog delivery."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka.errors import KafkaTimeoutError

from streamjoin.memory_settings import MIB
from streamjoin.state import (
    RUNNING_ACTIVE_OFFSET_SUM,
    ChangelogWriteError,
    RestoreCompleted,
    RestoreProgress,
    StateError,
    StateEvent,
    StoreNotWritableError,
    StoreSpec,
    TaskPhase,
    TaskSpec,
)
from streamjoin.state.memory import MemoryBudget

pytestmark = pytest.mark.broker

SPEC = TaskSpec("0_0", 0, 1, (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**9)))


KV_KEYS = 50
"""`write` cycles through this many key-value keys: each flush logs one record per key written."""
PILE_RECORDS = 80_000
"""Records of 1 kB: with 1 MiB memtables, a restore of them leaves about 20 level-0 files."""


def write(task: Any, low: int, high: int) -> None:
    for i in range(low, high):
        task.kv("kv").put(b"k%d" % (i % KV_KEYS), b"v%d" % i)
        task.window("win").put(b"w%d" % (i % 5), 10_000 + i, b"x%d" % i)


def snapshot(task: Any) -> tuple[dict[bytes, bytes], list[list[tuple[int, bytes]]]]:
    window = [task.window("win").fetch(b"w%d" % k, 0, 10**6) for k in range(5)]
    return dict(task.kv("kv").range()), window


def completions(manager: Any) -> list[RestoreCompleted]:
    found: list[RestoreCompleted] = []

    def keep(event: StateEvent) -> None:
        if isinstance(event, RestoreCompleted):
            found.append(event)

    manager.subscribe(keep)
    return found


async def test_suspend_then_resume_restores_nothing(
    producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    manager = await managers(producer, app_id=f"resume-{unique}")
    task = await manager.open_active(SPEC)
    await task.wait_ready()
    write(task, 0, 300)
    await manager.commit()
    write(task, 300, 400)  # unflushed: suspend flushes them
    before = snapshot(task)
    await manager.suspend(SPEC.task_id)
    assert task.phase is TaskPhase.SUSPENDED
    assert (
        manager.offset_sums()
        == {SPEC.task_id: sum(task.positions.values())}
        == {SPEC.task_id: (300 + KV_KEYS) + (100 + KV_KEYS)}  # window records + kv keys, twice
    )
    with pytest.raises(StoreNotWritableError):
        task.kv("kv").put(b"k", b"v")
    done = completions(manager)
    again = await manager.open_active(SPEC)
    await asyncio.wait_for(again.wait_ready(), 15)
    assert again is task
    assert [event.restored for event in done] == [0]
    assert snapshot(again) == before
    write(again, 400, 410)
    assert not manager.needs_flush
    write(again, 410, 1500)  # window records alone now exceed max_pending_writes (1,000)
    assert manager.needs_flush
    await manager.flush()
    assert not manager.needs_flush
    await manager.commit()
    assert manager.offset_sums() == {SPEC.task_id: RUNNING_ACTIVE_OFFSET_SUM}


async def test_a_standby_follows_its_active_within_a_bounded_lag(
    producer: Any,
    managers: Callable[..., Any],
    tmp_path: Path,
    until: Callable[..., Any],
    unique: str,
) -> None:
    app = f"standby-{unique}"
    active_worker = await managers(producer, app_id=app, state_dir=tmp_path / "a")
    standby_worker = await managers(producer, app_id=app, state_dir=tmp_path / "b")
    progress: list[RestoreProgress] = []
    standby_worker.subscribe(
        lambda e: progress.append(e) if isinstance(e, RestoreProgress) else None
    )
    active = await active_worker.open_active(SPEC)
    await active.wait_ready()
    standby = await standby_worker.open_standby(SPEC)
    for round_number in range(4):
        write(active, round_number * 250, (round_number + 1) * 250)
        await active_worker.commit()
        target = sum(active.positions.values())
        await until(lambda target=target: standby_worker.offset_sums()[SPEC.task_id] == target)
        assert standby.lag() == 0
        assert standby.read_lag() == active.read_lag() == (0, 0)  # what a query reports
        assert snapshot(standby) == snapshot(active)
    assert standby.phase is TaskPhase.STANDBY
    assert progress and all(event.standby for event in progress)
    assert active_worker.offset_sums() == {SPEC.task_id: RUNNING_ACTIVE_OFFSET_SUM}
    with pytest.raises(StoreNotWritableError):
        standby.kv("kv").put(b"k", b"v")

    # the active leaves; the standby takes over and restores only what it lacks (nothing)
    await active_worker.close_task(SPEC.task_id)
    done = completions(standby_worker)
    promoted = await standby_worker.open_active(SPEC)
    await asyncio.wait_for(promoted.wait_ready(), 15)
    assert promoted is standby
    assert [event.restored for event in done] == [0]
    write(promoted, 1000, 1010)
    await standby_worker.commit()
    assert sum(promoted.positions.values()) == 4 * (250 + KV_KEYS) + (10 + 10)


async def test_an_active_demoted_to_standby_keeps_following(
    producer: Any,
    managers: Callable[..., Any],
    tmp_path: Path,
    until: Callable[..., Any],
    unique: str,
) -> None:
    app = f"demote-{unique}"
    first = await managers(producer, app_id=app, state_dir=tmp_path / "a")
    second = await managers(producer, app_id=app, state_dir=tmp_path / "b")
    task = await first.open_active(SPEC)
    await task.wait_ready()
    write(task, 0, 100)
    await first.open_standby(SPEC)  # the task moves away; this worker keeps a standby
    assert task.phase is TaskPhase.STANDBY
    assert first.offset_sums() == {SPEC.task_id: 100 + KV_KEYS}  # the pending writes were flushed
    other = await second.open_active(SPEC)
    await asyncio.wait_for(other.wait_ready(), 15)
    write(other, 100, 150)
    await second.commit()
    await until(lambda: first.offset_sums()[SPEC.task_id] == 100 + KV_KEYS + 50 + KV_KEYS)
    assert snapshot(task) == snapshot(other)


async def test_waiting_for_a_task_that_is_suspended_before_it_is_ready_raises(
    producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    manager = await managers(producer, app_id=f"wait-{unique}")
    task = await manager.open_active(SPEC)
    assert task.phase is TaskPhase.RESTORING  # the first fetch takes a round trip at least
    await manager.suspend(SPEC.task_id)
    with pytest.raises(StateError, match="will not run: it was suspended"):
        await task.wait_ready()


class FailingDeliveries:
    """A producer whose every delivery fails (stand-in for a broker that stopped acking)."""

    class Batch:
        def append(self, *, key: bytes, value: bytes | None, timestamp: int) -> object:
            return object()

    def create_batch(self) -> Batch:
        return self.Batch()

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> Any:
        delivery = asyncio.get_running_loop().create_future()
        delivery.set_exception(KafkaTimeoutError())
        return delivery


async def test_a_failed_changelog_delivery_leaves_consistent_state(
    producer: Any, managers: Callable[..., Any], tmp_path: Path, unique: str
) -> None:
    app = f"fail-{unique}"
    good = await managers(producer, app_id=app, state_dir=tmp_path / "good")
    task = await good.open_active(SPEC)
    await task.wait_ready()
    write(task, 0, 20)
    await good.commit()
    await good.close()

    failing = await managers(FailingDeliveries(), app_id=app, state_dir=tmp_path / "good")
    task = await failing.open_active(SPEC)
    await task.wait_ready()
    before = snapshot(task)
    write(task, 20, 40)
    with pytest.raises(ChangelogWriteError, match="KafkaTimeoutError"):
        await failing.commit()
    assert task.phase is TaskPhase.SUSPENDED
    assert snapshot(task) == before  # the unconfirmed writes are gone, nothing else
    assert task.positions == {"kv": 20, "win": 20}


@pytest.mark.parametrize("ends_fail", [False, True], ids=["in-place", "ends-unread"])
async def test_a_promoted_standby_reads_on_to_ends_fetched_after_its_promotion(
    producer: Any,
    managers: Callable[..., Any],
    tmp_path: Path,
    until: Callable[..., Any],
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    ends_fail: bool,
) -> None:
    """A standby becomes active without starting its reading over (its reader is not told to
    track its partitions afresh), yet runs only once it holds what its previous owner wrote
    last, after the standby's last fetch. If the ends cannot be read, it reads over (slower,
    as correct) and says so."""
    app = f"promote-{unique}"
    old_owner = await managers(producer, app_id=app, state_dir=tmp_path / "a")
    new_owner = await managers(producer, app_id=app, state_dir=tmp_path / "b")
    if ends_fail:

        async def unreadable(partitions: Any) -> dict[Any, int]:
            raise StateError("no fetch response within 10s")

        monkeypatch.setattr(new_owner.ends, "ends", unreadable)
    active = await old_owner.open_active(SPEC)
    await active.wait_ready()
    standby = await new_owner.open_standby(SPEC)
    write(active, 0, 200)
    await old_owner.commit()
    target = sum(active.positions.values())
    await until(lambda: new_owner.offset_sums()[SPEC.task_id] == target)

    tracked: list[tuple[str, int]] = []
    track = new_owner._reader.track
    monkeypatch.setattr(
        new_owner._reader, "track", lambda t, p, sink: (tracked.append((t, p)), track(t, p, sink))
    )
    write(active, 200, 300)  # the old owner's last writes, confirmed as it lets go
    await old_owner.commit()
    expected, expected_sum = snapshot(active), sum(active.positions.values())
    await old_owner.close_task(SPEC.task_id)
    done = completions(new_owner)
    promoted = await new_owner.open_active(SPEC)
    await asyncio.wait_for(promoted.wait_ready(), 15)
    assert promoted is standby
    assert sum(promoted.positions.values()) == expected_sum
    assert snapshot(promoted) == expected
    assert len(done) == 1 and done[0].restored <= 100 + KV_KEYS
    if ends_fail:
        assert len(tracked) == len(SPEC.stores)
        assert "no changelog ends" in caplog.text
    else:
        assert tracked == []


async def test_a_task_whose_restore_piled_up_level0_files_runs_once_they_are_compacted(
    producer: Any,
    managers: Callable[..., Any],
    tmp_path: Path,
    unique: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A restore writes with RocksDB's compactions held: every memtable it flushed is a
    level-0 file spanning every key. A task reading through that pile paid a seek per file for
    every key (3 ms a key at 1 GB of state, 40 at 10), on the event loop: after restoring
    10 GB the worker stalled for minutes. It runs once RocksDB has compacted the pile, and
    says that it waits."""
    caplog.set_level(logging.INFO, logger="streamjoin.state")
    app, spec = f"pile-{unique}", TaskSpec("0_0", 0, 1, (StoreSpec.kv("kv"),))
    small = MemoryBudget(64 * MIB)  # 1 MiB memtables: a few MB of changelog pile up
    writer = await managers(producer, app_id=app, state_dir=tmp_path / "a", memory=small)
    task = await writer.open_active(spec)
    await task.wait_ready()
    for i in range(PILE_RECORDS):
        task.kv("kv").put(b"key-%06d" % (i * 7919 % PILE_RECORDS), b"v" * 1000)
        if i % 1000 == 999:
            await writer.commit()
    await writer.commit()
    await writer.close()

    elsewhere = await managers(producer, app_id=app, state_dir=tmp_path / "b", memory=small)
    restored = await elsewhere.open_active(spec)
    await asyncio.wait_for(restored.wait_ready(), 60)
    store = restored.kv("kv")
    level0 = store._db.property_int_value("rocksdb.num-files-at-level0")
    assert level0 < 10, f"running on a pile of {level0} level-0 files"
    assert len(dict(store.range())) == PILE_RECORDS
    assert "waiting for RocksDB to compact" in caplog.text
