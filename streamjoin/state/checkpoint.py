"""The checkpoint file: which changelog offset each of a task's stores reflects.

Written atomically (temporary file, fsync, rename, fsync of the directory) so that a crash
leaves either the old or the new checkpoint, never a torn one. An offset is the position to
resume reading from: the offset after the last changelog record the store holds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streamjoin.state.errors import StateError

__all__ = ("CheckpointUnreadable", "StoreOffset", "read_checkpoint", "write_checkpoint")

_VERSION = 1


class CheckpointUnreadable(StateError):
    """The checkpoint file exists but cannot be trusted (torn, edited, another version)."""


@dataclass(frozen=True, slots=True)
class StoreOffset:
    topic: str
    partition: int
    offset: int


def write_checkpoint(path: Path, task_id: str, offsets: Mapping[str, StoreOffset]) -> None:
    """Replace the checkpoint at `path` (creating its directory if it was deleted)."""
    document = {
        "version": _VERSION,
        "task": task_id,
        "stores": {
            name: {"topic": entry.topic, "partition": entry.partition, "offset": entry.offset}
            for name, entry in sorted(offsets.items())
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        file.write(json.dumps(document, separators=(",", ":")).encode())
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _entry(path: Path, name: object, raw: object) -> tuple[str, StoreOffset]:
    if not isinstance(name, str) or not isinstance(raw, dict):
        raise CheckpointUnreadable(f"checkpoint {path}: malformed entry for store {name!r}")
    topic, partition, offset = raw.get("topic"), raw.get("partition"), raw.get("offset")
    if (
        not isinstance(topic, str)
        or type(partition) is not int
        or type(offset) is not int
        or partition < 0
        or offset < 0
    ):
        raise CheckpointUnreadable(
            f"checkpoint {path}: invalid offsets for store {name!r}: {raw!r}"
        )
    return name, StoreOffset(topic, partition, offset)


def read_checkpoint(path: Path) -> dict[str, StoreOffset] | None:
    """Store name -> offset; None if there is no checkpoint; CheckpointUnreadable if corrupt."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointUnreadable(f"checkpoint {path} cannot be read: {exc}") from exc
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointUnreadable(f"checkpoint {path} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("version") != _VERSION:
        raise CheckpointUnreadable(f"checkpoint {path} is not a version {_VERSION} checkpoint")
    stores = document.get("stores")
    if not isinstance(stores, dict):
        raise CheckpointUnreadable(f"checkpoint {path} has no store offsets")
    return dict(_entry(path, name, raw) for name, raw in stores.items())
