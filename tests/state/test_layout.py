from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.errors import ConfigurationError
from streamjoin.state.layout import StateDirectory


def test_paths_follow_state_dir_app_task_store(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, "app")
    assert directory.store_dir("0_3", "left") == tmp_path / "app" / "0_3" / "left"
    assert directory.checkpoint_path("0_3") == tmp_path / "app" / "0_3" / ".checkpoint"


def test_task_ids_on_disk_are_directories_only(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, "app")
    assert directory.task_ids_on_disk() == []
    for name in ("1_0", "0_1", ".tmp"):
        (tmp_path / "app" / name).mkdir(parents=True)
    (tmp_path / "app" / "process-id").write_text("x")
    assert directory.task_ids_on_disk() == ["0_1", "1_0"]


def test_app_id_must_be_a_safe_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="invalid application id name"):
        StateDirectory(tmp_path, "../escape")
