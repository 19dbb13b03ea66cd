"""What a task's local data is worth when it is opened: the checkpoint decides."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamjoin.state.checkpoint import StoreOffset, write_checkpoint
from streamjoin.state.errors import StateError
from streamjoin.state.events import StateEvent, StateEvents, StateWiped
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec, TaskSpec
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.window_store import WindowStore
from streamjoin.state.task_stores import TaskStores

SPEC = TaskSpec("0_2", 2, 4, (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=100)))


def open_stores(tmp_path: Path) -> tuple[TaskStores, list[StateEvent]]:
    events = StateEvents()
    seen: list[StateEvent] = []
    events.subscribe(seen.append)
    stores = TaskStores(
        SPEC,
        app_id="app",
        directory=StateDirectory(tmp_path, "app"),
        events=events,
        memory=MemoryBudget(),
    )
    return stores, seen


def fill_and_close(tmp_path: Path, make_record: Callable[..., Any]) -> None:
    stores, _ = open_stores(tmp_path)
    stores.typed("kv", KeyValueStore).restore([make_record(0, b"k", b"v")])
    stores.positions["kv"] = 1
    stores.checkpoint()
    stores.close()


def test_a_fresh_task_starts_from_the_beginning_without_wiping(tmp_path: Path) -> None:
    stores, events = open_stores(tmp_path)
    assert stores.positions == {"kv": None, "win": None}
    assert stores.topics == {"kv": "app-kv-changelog", "win": "app-win-changelog"}
    assert events == []
    assert isinstance(stores.typed("win", WindowStore), WindowStore)
    with pytest.raises(StateError, match="no KeyValueStore named 'win'"):
        stores.typed("win", KeyValueStore)
    stores.close()


def test_a_checkpointed_store_resumes_from_its_offset(
    tmp_path: Path, make_record: Callable[..., Any]
) -> None:
    fill_and_close(tmp_path, make_record)
    stores, events = open_stores(tmp_path)
    assert stores.positions == {"kv": 1, "win": None}
    assert stores.typed("kv", KeyValueStore).get(b"k") == b"v"
    assert events == []
    stores.close()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("delete", "there is no checkpoint"),
        ("garbage", "the checkpoint is unreadable"),
        ("other topic", "the checkpoint lacks it"),
    ],
)
def test_local_data_without_a_usable_checkpoint_is_wiped(
    tmp_path: Path, make_record: Callable[..., Any], damage: str, reason: str
) -> None:
    fill_and_close(tmp_path, make_record)
    checkpoint = StateDirectory(tmp_path, "app").checkpoint_path(SPEC.task_id)
    if damage == "delete":
        checkpoint.unlink()
    elif damage == "garbage":
        checkpoint.write_bytes(b"\x00garbage")
    else:
        write_checkpoint(checkpoint, SPEC.task_id, {"kv": StoreOffset("old-kv-changelog", 2, 1)})
    stores, events = open_stores(tmp_path)
    assert stores.positions == {"kv": None, "win": None}
    assert stores.typed("kv", KeyValueStore).get(b"k") is None
    assert [(e.store, reason in e.reason) for e in events if isinstance(e, StateWiped)] == [
        ("kv", True)
    ]
    stores.close()


def test_unreadable_rocksdb_files_are_wiped(
    tmp_path: Path, make_record: Callable[..., Any]
) -> None:
    fill_and_close(tmp_path, make_record)
    (StateDirectory(tmp_path, "app").store_dir(SPEC.task_id, "kv") / "CURRENT").write_text("junk\n")
    stores, events = open_stores(tmp_path)
    assert stores.positions["kv"] is None
    assert stores.typed("kv", KeyValueStore).get(b"k") is None
    wiped = [e for e in events if isinstance(e, StateWiped)]
    assert [e.store for e in wiped] == ["kv"]
    assert "cannot be opened" in wiped[0].reason
    stores.close()


def test_an_unchanged_checkpoint_is_not_rewritten(tmp_path: Path) -> None:
    stores, _ = open_stores(tmp_path)
    stores.positions["kv"] = 5
    stores.checkpoint()
    path = StateDirectory(tmp_path, "app").checkpoint_path(SPEC.task_id)
    path.unlink()
    stores.checkpoint()
    assert not path.exists()
    stores.positions["kv"] = 6
    stores.checkpoint()
    assert path.exists()
    stores.close()


async def test_closing_off_the_loop_lets_the_loop_run_meanwhile(
    tmp_path: Path, make_record: Callable[..., Any]
) -> None:
    """Closing a RocksDB database waits for its background jobs (tenths of a second each on a
    busy machine); a worker closing a moved task's stores on its event loop held up its
    follow-up rejoin, hence the task's hand-off. The databases close on a thread now: other
    coroutines run while they do, and the stores reopen with their data."""
    fill_and_close(tmp_path, make_record)
    stores, _ = open_stores(tmp_path)
    ran: list[str] = []

    async def meanwhile() -> None:
        ran.append("loop")

    other = asyncio.create_task(meanwhile())
    await stores.close_off_loop()
    assert ran == ["loop"], "the loop ran something while the databases closed"
    await other
    stores.close()  # already closed: nothing to do
    reopened, _ = open_stores(tmp_path)
    assert reopened.positions["kv"] == 1
    reopened.close()
