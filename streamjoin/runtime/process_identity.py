"""Who a worker process is across restarts: a process id kept in its state directory.

Kafka Streams keeps one in `kafka-streams-process-metadata`; streamjoin keeps a UUID in
`<state_dir>/<app_id>/.process-id`. A worker restarted on the same state directory is the same
process, so its transactional producer fences the previous incarnation at once instead of
waiting for that one's transaction to time out. A static member (`--instance-id`) is that
identity already, and keeps it when its state directory is lost.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from streamjoin.state.layout import StateDirectory

__all__ = ("process_id", "transactional_id")

_FILE = ".process-id"


def process_id(state_dir: Path | str, app_id: str) -> str:
    """The process id stored in the state directory, created on first use."""
    path = StateDirectory(state_dir, app_id).app_dir / _FILE
    try:
        stored = path.read_text().strip()
    except FileNotFoundError:
        stored = ""
    try:
        return str(uuid.UUID(stored))
    except ValueError:
        pass
    fresh = str(uuid.uuid4())
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(_FILE + ".tmp")
    temporary.write_text(fresh + "\n")
    os.replace(temporary, path)
    return fresh


def transactional_id(
    app_id: str, state_dir: Path | str, group_instance_id: str | None = None
) -> str:
    """`<app_id>-<instance id>` for a static member, else `<app_id>-<process id>`."""
    return f"{app_id}-{group_instance_id or process_id(state_dir, app_id)}"
