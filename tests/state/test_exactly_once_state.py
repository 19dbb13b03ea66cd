"""Local state under exactly-once, on Apache Kafka: a store writes to RocksDB only once its
transaction has committed, so a worker that crashes with a transaction open restores from its
checkpoint to exactly what the committed transactions hold: no wipe, no aborted write."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from streamjoin.broker import Broker
from streamjoin.state import (
    RestoreStarted,
    StateEvent,
    StateWiped,
    StoreSpec,
    TaskSpec,
    open_transactions,
)

pytestmark = pytest.mark.broker

CRASHING_WORKER = """
import asyncio, os, sys
from aiokafka import AIOKafkaProducer
from streamjoin.state import StateConfig, StateManager, StoreSpec, TaskSpec
from streamjoin.state.reader import ReaderConfig

async def main(bootstrap, state_dir, app_id):
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=app_id, enable_idempotence=True
    )
    await producer.start()
    config = StateConfig(reader=ReaderConfig(isolation_level="read_committed"))
    manager = StateManager(
        state_dir=state_dir, app_id=app_id, bootstrap=bootstrap, producer=producer, config=config
    )
    await manager.start()
    spec = TaskSpec("0_1", 1, 2, (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**9)))
    task = await manager.open_active(spec)
    await task.wait_ready()
    kv, win = task.kv("kv"), task.window("win")
    await producer.begin_transaction()
    for i in range(300):
        kv.put(b"k%d" % (i % 97), b"v%d" % i)
        win.put(b"w%d" % (i % 11), 1000 + i, b"x%d" % i)
    await manager.prepare_commit()
    await producer.commit_transaction()
    manager.complete_commit()
    await producer.begin_transaction()
    for i in range(300, 3000):
        kv.put(b"k%d" % (i % 97), b"late%d" % i)
        win.put(b"w%d" % (i % 11), 1000 + i, b"late%d" % i)
    await manager.prepare_commit()  # in the broker's log, in a transaction that never commits
    os._exit(3)

asyncio.run(main(*sys.argv[1:]))
"""


SPEC = TaskSpec("0_1", 1, 2, (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=10**9)))


@pytest.fixture
def broker(kafka_broker: Broker) -> Broker:
    """Transactions need Apache Kafka (Tansu has none)."""
    return kafka_broker


async def test_a_crash_with_a_transaction_open_restores_only_committed_writes(
    *, broker: Broker, producer: Any, managers: Callable[..., Any], tmp_path: Path, unique: str
) -> None:
    app = f"eos-{unique}"
    script = tmp_path / "worker.py"
    script.write_text(CRASHING_WORKER)
    worker = await asyncio.create_subprocess_exec(
        sys.executable, str(script), broker.bootstrap, str(tmp_path / "state"), app
    )
    assert await asyncio.wait_for(worker.wait(), 60) == 3
    # The restarted worker's producer (same transactional id) aborts the open transaction.
    fencing = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap, transactional_id=app, enable_idempotence=True
    )
    await fencing.start()
    await fencing.stop()

    manager = await managers(producer, app_id=app, isolation_level="read_committed")
    events: list[StateEvent] = []
    manager.subscribe(events.append)
    task = await manager.open_active(SPEC)
    await asyncio.wait_for(task.wait_ready(), 30)
    table = dict(task.kv("kv").range())
    window = {b"w%d" % k: task.window("win").fetch(b"w%d" % k, 0, 10**6) for k in range(11)}
    assert table == {b"k%d" % (i % 97): b"v%d" % i for i in range(300)}
    assert window == {
        b"w%d" % k: [(1000 + i, b"x%d" % i) for i in range(300) if i % 11 == k] for k in range(11)
    }
    started = next(e for e in events if isinstance(e, RestoreStarted))
    assert started.start_offsets["kv"] > 0  # from the checkpoint of the committed transaction
    assert not any(isinstance(e, StateWiped) for e in events)


@pytest.mark.parametrize("standby_first", [False, True], ids=["restored", "promoted"])
async def test_a_moved_task_runs_only_once_it_holds_its_previous_owners_last_transaction(
    *,
    broker: Broker,
    producer: Any,
    managers: Callable[..., Any],
    until: Callable[..., Any],
    tmp_path: Path,
    unique: str,
    standby_first: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A commit returns before the broker has written the transaction's markers into the
    changelogs, and until then their last stable offset stays before its writes, while the
    next owner's committed input offsets wait for the markers. A next owner that took the last
    stable offset for a changelog's end ran without its previous owner's last writes, and
    its input started after them: a scale-out under exactly-once lost results. Here that
    transaction is still open when the next owner reads: its task (restored, or promoted
    from a standby) must not run until the transaction is resolved, and then holds it; a
    wait that lasts is said."""
    monkeypatch.setattr(open_transactions, "NOTICE_AFTER_S", 1.0)
    caplog.set_level(logging.WARNING, logger="streamjoin.state")
    app = f"moved-{unique}"
    transactional = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap, transactional_id=app, enable_idempotence=True
    )
    await transactional.start()
    try:
        spec = TaskSpec("0_1", 1, 2, (StoreSpec.kv("kv"),))
        old = await managers(
            transactional, app_id=app, state_dir=tmp_path / "a", isolation_level="read_committed"
        )
        new = await managers(
            producer, app_id=app, state_dir=tmp_path / "b", isolation_level="read_committed"
        )
        active = await old.open_active(spec)
        await active.wait_ready()

        async def write(keys: range, value: bytes, *, commit: bool) -> None:
            await transactional.begin_transaction()
            for i in keys:
                active.kv("kv").put(b"k%d" % i, value)
            await old.prepare_commit()  # the writes are in the changelog, in the transaction
            if commit:
                await transactional.commit_transaction()
                old.complete_commit()

        await write(range(100), b"first", commit=True)
        if standby_first:
            standby = await new.open_standby(spec)
            await until(lambda: len(dict(standby.kv("kv").range())) == 100)
        await write(range(100, 200), b"last", commit=False)
        moved = await new.open_active(spec)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(moved.wait_ready(), 2)
        assert "a transaction neither committed nor aborted yet" in caplog.text
        await transactional.commit_transaction()
        old.complete_commit()
        await asyncio.wait_for(moved.wait_ready(), 15)
        assert dict(moved.kv("kv").range()) == {
            b"k%d" % i: b"first" if i < 100 else b"last" for i in range(200)
        }
    finally:
        await transactional.stop()
