"""`streamjoin worker --processes N`: one GET /status for the host, as one /metrics is.

Each process writes its status (status.py) beside its mirrored metrics every second
(`status-<index>.json` in the supervisor's metrics directory, replaced atomically); the
supervisor's endpoint answers with every live process's member in one document. The file of a
process that ended is removed as the supervisor sees it end, so a dead process never shows as
a member.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ("forget_status", "host_status", "write_status")

_PREFIX = "status-"


def _path(directory: Path, index: int) -> Path:
    return directory / f"{_PREFIX}{index}.json"


def write_status(directory: Path, index: int, document: dict[str, Any]) -> None:
    """Replace process `index`'s status with `document` (readers see the old or the new)."""
    handle, temporary = tempfile.mkstemp(prefix=f".{_PREFIX}", dir=directory)
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(document, out)
        os.replace(temporary, _path(directory, index))
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def forget_status(directory: Path, index: int) -> None:
    _path(directory, index).unlink(missing_ok=True)


def host_status(directory: Path) -> dict[str, Any]:
    """Every process's member in one document (a file half gone or unreadable is skipped:
    its process is ending or starting)."""
    process_id, members = None, []
    for path in sorted(directory.glob(f"{_PREFIX}*.json")):
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        process_id = process_id or document.get("process_id")
        members += document.get("members", [])
    members.sort(key=lambda m: m.get("index") or 0)
    return {"process_id": process_id, "members": members}
