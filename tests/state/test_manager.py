"""Restore through the StateManager against the embedded broker: after a crash, a wiped state
directory, a corrupt checkpoint or a changelog that is shorter than the local state, the stores
hold exactly what the changelogs hold."""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicLayoutError, TopicSpec, ensure_topics
from streamjoin.runtime.joins.pending import PendingNonMatches
from streamjoin.runtime.joins.records import Side
from streamjoin.state import (
    RestoreCompleted,
    RestoreProgress,
    RestoreStarted,
    StateEvent,
    StateManager,
    StateWiped,
    StoreLockedError,
    StoreSpec,
    TaskSpec,
    changelog_topic,
    ensure_changelogs,
)
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.checkpoint import read_checkpoint
from streamjoin.state.phases import TaskPhase
from streamjoin.state.stores.encoding import split_changelog_key
from streamjoin.state.task_state import TaskState

pytestmark = pytest.mark.broker

STORES = (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**9))
SPEC = TaskSpec("0_1", 1, 2, STORES)

CRASHING_WORKER = """
import asyncio, os, sys
from aiokafka import AIOKafkaProducer
from streamjoin.state import StateManager, StoreSpec, TaskSpec

async def main(bootstrap, state_dir, app_id):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=1024)
    await producer.start()
    manager = StateManager(
        state_dir=state_dir, app_id=app_id, bootstrap=bootstrap, producer=producer
    )
    await manager.start()
    spec = TaskSpec("0_1", 1, 2, (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**9)))
    task = await manager.open_active(spec)
    await task.wait_ready()
    kv, win = task.kv("kv"), task.window("win")

    def write(low, high):
        for i in range(low, high):
            kv.put(b"k%d" % (i % 97), b"v%d" % i)
            if i % 7 == 0:
                kv.delete(b"k%d" % (i % 13))
            win.put(b"w%d" % (i % 11), 1000 + i, b"x%d" % i)

    write(0, 300)
    await manager.commit()
    write(300, 3000)
    await asyncio.sleep(0.5)  # full batches reach the broker; the open ones never will
    os._exit(3)  # crash: no flush, no checkpoint, no close

asyncio.run(main(*sys.argv[1:]))
"""


def write(task: TaskState, low: int, high: int) -> None:
    kv, win = task.kv("kv"), task.window("win")
    for i in range(low, high):
        kv.put(b"k%d" % (i % 97), b"v%d" % i)
        if i % 7 == 0:
            kv.delete(b"k%d" % (i % 13))
        win.put(b"w%d" % (i % 11), 1000 + i, b"x%d" % i)


def logged_kv_records(low: int, high: int) -> int:
    """Key-value changelog records of `write(low, high)` into an empty store, flushed once: a
    record per key whose last write is a put (a key deleted before any flush is never logged)."""
    last: dict[int, bool] = {}
    for i in range(low, high):
        last[i % 97] = True
        if i % 7 == 0:
            last[i % 13] = False
    return sum(last.values())


def contents(task: TaskState) -> tuple[dict[bytes, bytes], dict[bytes, list[tuple[int, bytes]]]]:
    window = {b"w%d" % k: task.window("win").fetch(b"w%d" % k, 0, 10**6) for k in range(11)}
    return dict(task.kv("kv").range()), {key: found for key, found in window.items() if found}


async def changelog_contents(
    read_changelog: Callable[[str, int], Any], app: str
) -> tuple[dict[bytes, bytes], dict[bytes, list[tuple[int, bytes]]], int]:
    """What the changelogs hold: last value per key (tombstones delete), window records by key."""
    table: dict[bytes, bytes] = {}
    kv_records = await read_changelog(changelog_topic(app, "kv"), 1)
    for key, value in kv_records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    window: dict[bytes, list[tuple[int, bytes]]] = {}
    win_records = await read_changelog(changelog_topic(app, "win"), 1)
    for changelog_key, value in win_records:
        key, timestamp, _ = split_changelog_key(changelog_key)
        window.setdefault(key, []).append((timestamp, value))
    for records in window.values():
        records.sort(key=lambda item: item[0])
    return table, window, len(kv_records) + len(win_records)


def recorder(manager: StateManager) -> list[StateEvent]:
    events: list[StateEvent] = []
    manager.subscribe(events.append)
    return events


async def test_crash_without_flush_then_restore_yields_exactly_the_changelog(
    *,
    broker: Broker,
    producer: Any,
    managers: Callable[..., Any],
    read_changelog: Callable[[str, int], Any],
    tmp_path: Path,
    unique: str,
) -> None:
    app = f"crash-{unique}"
    script = tmp_path / "worker.py"
    script.write_text(CRASHING_WORKER)
    worker = await asyncio.create_subprocess_exec(
        sys.executable, str(script), broker.bootstrap, str(tmp_path / "state"), app
    )
    assert await asyncio.wait_for(worker.wait(), 60) == 3
    table, window, changelog_size = await changelog_contents(read_changelog, app)
    written = 3000 + 3000 + len(range(0, 3000, 7))
    assert 0 < changelog_size < written  # the crash lost the unsent tail

    manager = await managers(producer, app_id=app)
    events = recorder(manager)
    task = await manager.open_active(SPEC)
    await asyncio.wait_for(task.wait_ready(), 30)
    assert contents(task) == (table, window)
    started = next(e for e in events if isinstance(e, RestoreStarted))
    completed = next(e for e in events if isinstance(e, RestoreCompleted))
    assert started.start_offsets["kv"] > 0  # resumed from the checkpoint of the first commit
    assert completed.restored == changelog_size - sum(started.start_offsets.values())


async def test_deleting_the_state_directory_means_a_full_restore(
    producer: Any, managers: Callable[..., Any], tmp_path: Path, unique: str
) -> None:
    app = f"wipe-{unique}"
    first = await managers(producer, app_id=app)
    task = await first.open_active(SPEC)
    await task.wait_ready()
    write(task, 0, 500)
    await first.commit()
    before = contents(task)
    sums = first.offset_sums()
    await first.close()
    assert first.offset_sums() == {SPEC.task_id: sum(task.positions.values())}  # from disk
    shutil.rmtree(tmp_path / "state")

    second = await managers(producer, app_id=app)
    assert second.offset_sums() == {}
    events = recorder(second)
    again = await second.open_active(SPEC)
    await asyncio.wait_for(again.wait_ready(), 30)
    assert contents(again) == before
    completed = next(e for e in events if isinstance(e, RestoreCompleted))
    assert completed.restored == sum(again.positions.values()) == 500 + logged_kv_records(0, 500)
    assert sums == {SPEC.task_id: -2}
    assert not any(isinstance(e, StateWiped) for e in events)  # nothing local to wipe


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (b"{not json", "unreadable"),
        (None, "outside the changelog's range"),
    ],
)
async def test_untrustworthy_local_state_is_wiped_and_fully_restored(
    *,
    producer: Any,
    managers: Callable[..., Any],
    tmp_path: Path,
    unique: str,
    damage: bytes | None,
    reason: str,
) -> None:
    app = f"damaged-{unique}"
    first = await managers(producer, app_id=app)
    task = await first.open_active(SPEC)
    await task.wait_ready()
    write(task, 0, 200)
    await first.commit()
    before = contents(task)
    await first.close()
    checkpoint = tmp_path / "state" / app / SPEC.task_id / ".checkpoint"
    if damage is None:  # the changelog was recreated or truncated: local state is ahead of it
        damage = checkpoint.read_bytes().replace(b'"offset":', b'"offset":1000000')
    checkpoint.write_bytes(damage)

    second = await managers(producer, app_id=app)
    events = recorder(second)
    again = await second.open_active(SPEC)
    await asyncio.wait_for(again.wait_ready(), 30)
    assert contents(again) == before
    wiped = [e for e in events if isinstance(e, StateWiped)]
    assert {e.store for e in wiped} == {"kv", "win"}
    assert all(reason in e.reason for e in wiped)


async def test_a_100k_record_restore(
    broker: Broker, producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    app = f"big-{unique}"
    spec = TaskSpec("0_0", 0, 1, (StoreSpec.kv("kv"),))
    await ensure_changelogs(broker.bootstrap, app, {spec.stores[0]: 1})
    writer = ChangelogWriter(producer, changelog_topic(app, "kv"), 0)
    for i in range(100_000):
        writer.append(b"key-%06d" % (i % 60_000), b"value-%d" % i)
    assert await writer.wait_confirmed(writer.seal()) == 100_000
    manager = await managers(producer, app_id=app)
    events = recorder(manager)
    task = await manager.open_active(spec)
    await asyncio.wait_for(task.wait_ready(), 120)
    completed = next(e for e in events if isinstance(e, RestoreCompleted))
    assert completed.restored == 100_000
    store = task.kv("kv")
    assert sum(1 for _ in store.range()) == 60_000
    assert store.get(b"key-000007") == b"value-60007"
    assert store.get(b"key-059999") == b"value-59999"


async def test_small_tasks_are_ready_while_a_big_one_still_restores(
    *,
    broker: Broker,
    producer: Any,
    managers: Callable[..., Any],
    until: Callable[..., Any],
    unique: str,
) -> None:
    app = f"many-{unique}"
    specs = [TaskSpec(f"0_{p}", p, 4, (StoreSpec.kv("kv"),)) for p in range(4)]
    await ensure_changelogs(broker.bootstrap, app, {StoreSpec.kv("kv"): 4})
    for spec, count in zip(specs, (200_000, 50, 50, 50), strict=True):
        writer = ChangelogWriter(producer, changelog_topic(app, "kv"), spec.partition)
        for i in range(count):
            writer.append(b"k%d" % i, b"v")
        await writer.wait_confirmed(writer.seal())
    manager = await managers(producer, app_id=app)
    events = recorder(manager)

    def big_progress() -> list[RestoreProgress]:
        return [e for e in events if isinstance(e, RestoreProgress) and e.task_id == "0_0"]

    big = await manager.open_active(specs[0])
    await until(lambda: bool(big_progress()))
    small = [await manager.open_active(spec) for spec in specs[1:]]
    await asyncio.wait_for(asyncio.gather(*(task.wait_ready() for task in small)), 30)
    assert big.phase is TaskPhase.RESTORING
    await asyncio.wait_for(big.wait_ready(), 60)
    finished = [e.task_id for e in events if isinstance(e, RestoreCompleted)]
    assert finished == ["0_1", "0_2", "0_3", "0_0"]
    lags = [e.remaining for e in big_progress()]
    assert all(lag is not None and lag > 0 for lag in lags)
    assert lags == sorted(lags, reverse=True)


async def test_a_changelog_with_the_wrong_partition_count_is_refused(
    broker: Broker, producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    app = f"layout-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(changelog_topic(app, "kv"), 3)])
    manager = await managers(producer, app_id=app)
    with pytest.raises(TopicLayoutError, match="has 3 partitions, expected 2"):
        await manager.open_active(SPEC)


HOLDING_WORKER = """
import asyncio, sys
from aiokafka import AIOKafkaProducer
from streamjoin.state import StateManager, StoreSpec, TaskSpec

async def main(bootstrap, state_dir, app_id):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    manager = StateManager(
        state_dir=state_dir, app_id=app_id, bootstrap=bootstrap, producer=producer
    )
    await manager.start()
    spec = TaskSpec("0_1", 1, 2, (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**9)))
    task = await manager.open_active(spec)
    await task.wait_ready()
    for i in range(500):
        task.kv("kv").put(b"k%d" % i, b"v%d" % i)
        task.window("win").put(b"w%d" % (i % 11), 1000 + i, b"x%d" % i)
    await producer.flush()
    await manager.commit()
    print("holding", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await manager.close()
    await producer.stop()

asyncio.run(main(*sys.argv[1:]))
"""


async def test_a_task_held_by_another_process_opens_once_it_lets_go_without_a_restore(
    *,
    broker: Broker,
    producer: Any,
    managers: Callable[..., Any],
    tmp_path: Path,
    unique: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two worker processes of one host share the state directory: the second waits for the
    task directory's lock, then reopens the stores where they are (0 records restored)."""
    app = f"handover-{unique}"
    script = tmp_path / "holder.py"
    script.write_text(HOLDING_WORKER)
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        broker.bootstrap,
        str(tmp_path / "state"),
        app,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdin is not None and holder.stdout is not None
    assert await asyncio.wait_for(holder.stdout.readline(), 60) == b"holding\n"
    impatient = await managers(producer, app_id=app, lock_timeout_s=0.2)
    with pytest.raises(StoreLockedError, match="stayed locked by another process"):
        await impatient.open_standby(SPEC)

    manager = await managers(producer, app_id=app)
    events = recorder(manager)
    caplog.set_level("INFO", logger="streamjoin.state.task_lock")
    waiting = asyncio.Event()
    handler = logging.Handler()
    handler.emit = lambda record: waiting.set()  # type: ignore[method-assign]
    logging.getLogger("streamjoin.state.task_lock").addHandler(handler)
    try:
        opening = asyncio.create_task(manager.open_active(SPEC))
        await asyncio.wait_for(waiting.wait(), 30)
    finally:
        logging.getLogger("streamjoin.state.task_lock").removeHandler(handler)
    assert "waiting for another process" in caplog.text
    assert not opening.done()
    holder.stdin.write(b"go\n")
    assert await asyncio.wait_for(holder.wait(), 30) == 0
    task = await asyncio.wait_for(opening, 30)
    await asyncio.wait_for(task.wait_ready(), 30)
    assert "state handed over" in caplog.text
    completed = [e for e in events if isinstance(e, RestoreCompleted)]
    assert [e.restored for e in completed] == [0]
    assert task.kv("kv").get(b"k499") == b"v499"


async def test_opening_tasks_one_after_another_lets_the_event_loop_run_between_them(
    producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    """Opening a task's stores (RocksDB: directories, files, fsyncs) holds the event loop; a
    worker given hundreds of tasks at once held it for their sum (6 s for 64 tasks on a loaded
    machine) and was fenced for missing heartbeats. Each open now yields before returning."""
    manager = await managers(producer, app_id=f"yield-{unique}")
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    try:
        # The first open creates the changelogs (broker round trips): warm that up first.
        await manager.open_active(TaskSpec("0_0", 0, 4, STORES))
        seen = []
        for partition in (1, 2, 3):
            await manager.open_active(TaskSpec(f"0_{partition}", partition, 4, STORES))
            seen.append(turns)
    finally:
        counter.cancel()
    assert seen[0] < seen[1] < seen[2], seen


async def test_the_event_loop_runs_while_a_task_s_stores_open(
    producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    """RocksDB's open (files created and synced) runs on threads: the loop keeps turning
    while it is under way, not only between one task's opens and the next (a worker given 512
    tasks stalled its loop 1-1.5 s at a time and overran the rebalance timeout opening them)."""
    manager = await managers(producer, app_id=f"opening-{unique}")
    await manager.open_active(TaskSpec("0_0", 0, 2, STORES))  # creates the changelogs first
    spec = TaskSpec("0_1", 1, 2, STORES)
    locks = [manager.directory.store_dir(spec.task_id, s.name) / "LOCK" for s in STORES]
    seen_opening = False

    async def watch() -> None:
        nonlocal seen_opening
        while manager.task(spec.task_id) is None:
            # A store's database is open (its LOCK file exists) but the task is not yet.
            seen_opening = seen_opening or any(lock.exists() for lock in locks)
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await manager.open_active(spec)
    await watcher
    assert seen_opening


def checkpointed(manager: StateManager) -> dict[str, int]:
    found = read_checkpoint(manager.directory.checkpoint_path(SPEC.task_id)) or {}
    return {name: entry.offset for name, entry in found.items()}


async def running(manager: StateManager) -> TaskState:
    task = await manager.open_active(SPEC)
    await asyncio.wait_for(task.wait_ready(), 30)
    return task


async def crash_behind_the_checkpoint(
    manager: StateManager, first: int, more: int
) -> dict[str, int]:
    """Two commits, the second under the checkpoint threshold, then a close as a crash leaves
    the state (no checkpoint at the end); returns the checkpoint, behind RocksDB's data."""
    task = await running(manager)
    write(task, 0, first)
    await manager.commit()
    write(task, first, first + more)
    await manager.commit()  # in RocksDB and the changelogs; the checkpoint stays behind
    behind = checkpointed(manager)
    assert sum(behind.values()) < sum(p or 0 for p in task.positions.values())
    await manager.close(clean=False)
    return behind


async def test_a_commit_checkpoints_only_once_the_changelogs_moved_10_000_records_past_it(
    producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    """As Kafka Streams (its checkpoint threshold): syncing every store and rewriting the file at
    every commit cost five fsyncs per task per commit; suspending or closing always writes it."""
    manager = await managers(producer, app_id=f"threshold-{unique}")
    task = await running(manager)
    write(task, 0, 100)
    await manager.commit()
    first = checkpointed(manager)
    assert sum(first.values()) > 0, "a task's first commit writes its checkpoint"
    write(task, 100, 2_000)
    await manager.commit()
    assert checkpointed(manager) == first, "under 10,000 records moved: not rewritten"
    write(task, 2_000, 12_000)
    await manager.commit()
    moved = checkpointed(manager)
    assert sum(moved.values()) - sum(first.values()) > 10_000
    write(task, 12_000, 12_010)
    await manager.commit()
    assert checkpointed(manager) == moved
    await manager.suspend(SPEC.task_id)
    assert checkpointed(manager) == task.positions, "suspending writes it whatever moved"


async def test_a_restart_from_a_checkpoint_behind_the_local_state_yields_exactly_the_changelog(
    producer: Any,
    managers: Callable[..., Any],
    read_changelog: Callable[[str, int], Any],
    unique: str,
) -> None:
    """RocksDB holds writes past the checkpoint when the process dies: the restore replays the
    changelog from the checkpoint over them."""
    app = f"behind-{unique}"
    behind = await crash_behind_the_checkpoint(await managers(producer, app_id=app), 300, 2_700)
    again = await managers(producer, app_id=app)
    events = recorder(again)
    task = await running(again)
    table, window, _ = await changelog_contents(read_changelog, app)
    assert contents(task) == (table, window)
    started = next(e for e in events if isinstance(e, RestoreStarted))
    assert started.start_offsets == behind


async def test_the_first_commit_after_a_store_was_wiped_writes_the_checkpoint(
    producer: Any, managers: Callable[..., Any], tmp_path: Path, unique: str
) -> None:
    """The file names data no longer there, however little the changelogs moved since."""
    app = f"wiped-{unique}"
    await crash_behind_the_checkpoint(await managers(producer, app_id=app), 200, 100)
    (tmp_path / "state" / app / SPEC.task_id / "kv" / "CURRENT").write_bytes(b"garbage")
    second = await managers(producer, app_id=app)
    events = recorder(second)
    again = await running(second)
    assert [e.store for e in events if isinstance(e, StateWiped)] == ["kv"]
    await second.commit()
    assert checkpointed(second) == again.positions


async def test_a_suspended_task_gives_back_the_memory_its_pending_non_matches_held(
    producer: Any, managers: Callable[..., Any], unique: str
) -> None:
    """Its join is gone while its stores stay open (it may come back): the budget's part for
    pending non-matches must not count an index nobody holds."""
    manager = await managers(producer, app_id=f"held-{unique}")
    task = await running(manager)
    PendingNonMatches(task.kv("kv")).add(1, Side.LEFT, b"k", 0, b"v")
    assert manager.memory.pending.used_bytes > 0
    await manager.suspend(SPEC.task_id)
    assert manager.memory.pending.used_bytes == 0
