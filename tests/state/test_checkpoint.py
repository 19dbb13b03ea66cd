from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.state.checkpoint import (
    CheckpointUnreadable,
    StoreOffset,
    read_checkpoint,
    write_checkpoint,
)


def test_round_trip_and_no_temporary_file_left(tmp_path: Path) -> None:
    path = tmp_path / "task" / ".checkpoint"
    offsets = {
        "a": StoreOffset("app-a-changelog", 3, 120),
        "b": StoreOffset("app-b-changelog", 3, 0),
    }
    write_checkpoint(path, "task", offsets)
    assert read_checkpoint(path) == offsets
    assert sorted(p.name for p in path.parent.iterdir()) == [".checkpoint"]
    write_checkpoint(path, "task", {"a": StoreOffset("app-a-changelog", 3, 200)})
    assert read_checkpoint(path) == {"a": StoreOffset("app-a-changelog", 3, 200)}


def test_missing_checkpoint_is_none(tmp_path: Path) -> None:
    assert read_checkpoint(tmp_path / "nothing") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\xff garbage", "not valid JSON"),
        (
            b'{"version": 1, "stores": {"a": {"topic": "t", "partition": 0, "offset"',
            "not valid JSON",
        ),
        (b'{"version": 9, "stores": {}}', "not a version 1 checkpoint"),
        (b"[1, 2]", "not a version 1 checkpoint"),
        (b'{"version": 1}', "has no store offsets"),
        (b'{"version": 1, "stores": {"a": 5}}', "malformed entry"),
        (
            b'{"version": 1, "stores": {"a": {"topic": "t", "partition": 0, "offset": -1}}}',
            "invalid",
        ),
        (
            b'{"version": 1, "stores": {"a": {"topic": "t", "partition": 0, "offset": true}}}',
            "invalid",
        ),
        (b'{"version": 1, "stores": {"a": {"topic": 1, "partition": 0, "offset": 3}}}', "invalid"),
    ],
)
def test_corrupt_checkpoints_are_unreadable(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(content)
    with pytest.raises(CheckpointUnreadable, match=message):
        read_checkpoint(path)
