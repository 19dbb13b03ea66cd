"""The process id of a host's workers: created once and kept in `<state_dir>/<app_id>/process.id`.

Every worker process started on one state directory (`streamjoin worker --processes N`, or a
restart) tells the group the same id, so the task assignor sees one client with their state.
Deleting the state directory makes a new process: one without state, as it should be. An
exactly-once worker's transactional id is built on it, so a worker restarted on the same state
directory fences its previous incarnation at once instead of waiting for that one's transaction
to time out.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ("PROCESS_ID_FILE", "process_id", "transactional_id")

PROCESS_ID_FILE = "process.id"


def process_id(app_dir: Path) -> str:
    """The id kept in `app_dir`, created if missing. Processes starting together agree on one:
    a new id is linked into place only if no file exists yet (an empty one is replaced)."""
    path = app_dir / PROCESS_ID_FILE
    with contextlib.suppress(FileNotFoundError):
        if existing := path.read_text().strip():
            return existing
    app_dir.mkdir(parents=True, exist_ok=True)
    value = uuid.uuid4().hex
    draft = app_dir / f".{PROCESS_ID_FILE}.{value}"
    draft.write_text(value + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:
        if existing := path.read_text().strip():
            return existing
        os.replace(draft, path)
    finally:
        draft.unlink(missing_ok=True)
    return value


def transactional_id(
    app_id: str, app_dir: Path, group_instance_id: str | None = None, member: int | None = None
) -> str:
    """`<app_id>-<instance id>` for a static member (it keeps that identity when its state
    directory is lost), else `<app_id>-<process id>`; `member`: the index of this process among
    the host's `--processes`, which share one process id and would fence each other."""
    base = group_instance_id or process_id(app_dir)
    return f"{app_id}-{base}" + ("" if member is None or group_instance_id else f"-{member}")
