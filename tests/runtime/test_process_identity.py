"""The process id behind an exactly-once worker's transactional id: the same across restarts
on one state directory, a new one for a new directory, the static instance id when given."""

from __future__ import annotations

import uuid
from pathlib import Path

from streamjoin.runtime.process_identity import process_id, transactional_id


def test_a_process_keeps_its_id_across_restarts(tmp_path: Path) -> None:
    first = process_id(tmp_path, "ads")
    assert uuid.UUID(first)
    assert process_id(tmp_path, "ads") == first
    assert transactional_id("ads", tmp_path) == f"ads-{first}"
    assert process_id(tmp_path / "elsewhere", "ads") != first


def test_an_unreadable_id_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "ads").mkdir()
    (tmp_path / "ads" / ".process-id").write_text("not a uuid\n")
    fresh = process_id(tmp_path, "ads")
    assert uuid.UUID(fresh)
    assert process_id(tmp_path, "ads") == fresh


def test_a_static_member_is_its_instance_id(tmp_path: Path) -> None:
    assert transactional_id("ads", tmp_path, "worker-7") == "ads-worker-7"
    assert not (tmp_path / "ads" / ".process-id").exists()
