"""Where local state lives: `<state_dir>/<app_id>/<task>/<store>` plus a checkpoint file per task.

Everything under the state directory can be rebuilt from the changelogs, so deleting any part of
it (or all of it) is safe while no worker runs; a running worker recreates what it writes.
"""

from __future__ import annotations

from pathlib import Path

from streamjoin.state.specs import check_name

__all__ = ("CHECKPOINT_FILE", "StateDirectory")

CHECKPOINT_FILE = ".checkpoint"


class StateDirectory:
    """Paths of one application's local state."""

    def __init__(self, state_dir: Path | str, app_id: str) -> None:
        self.app_dir = Path(state_dir) / check_name("application id", app_id)

    def task_dir(self, task_id: str) -> Path:
        return self.app_dir / check_name("task", task_id)

    def store_dir(self, task_id: str, store: str) -> Path:
        return self.task_dir(task_id) / check_name("store", store)

    def checkpoint_path(self, task_id: str) -> Path:
        return self.task_dir(task_id) / CHECKPOINT_FILE

    def task_ids_on_disk(self) -> list[str]:
        """Tasks with a directory here, in name order (other files in the app dir are ignored)."""
        if not self.app_dir.is_dir():
            return []
        return sorted(
            entry.name
            for entry in self.app_dir.iterdir()
            if entry.is_dir() and not entry.name.startswith(".")
        )
