"""Open RocksDB databases the way every store needs them: raw bytes, created on demand, with
the options of the worker's memory budget (memory.py).

Durability comes from the changelog, not from RocksDB: writes go through the WAL without fsync,
and the WAL is synced only before a checkpoint claims the data (see TaskState.checkpoint).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rocksdict import Options, Rdict, ReadOptions

from streamjoin.state.errors import StateError, StoreLockedError

__all__ = ("open_rocksdb", "scan")


def open_rocksdb(path: Path, options: Options) -> Rdict:
    """Open (or create) the database at `path` with `options` (raw mode: keys and values are
    bytes, `create_if_missing`; see MemoryBudget.options).

    Raises StoreLockedError when another handle holds its lock, StateError when it is unreadable.
    """
    path.mkdir(parents=True, exist_ok=True)
    try:
        # Name the default column family explicitly: otherwise rocksdict reopens it with the
        # options stored in the database, not these.
        return Rdict(str(path), options, column_families={"default": options})
    except Exception as exc:
        if "lock" in str(exc).lower():
            raise StoreLockedError(
                f"state store {path} is in use by another process ({exc}): a worker on "
                "the same --state-dir (give each worker its own) or a tool that opened it"
            ) from exc
        raise StateError(f"cannot open state store {path}: {exc}") from exc


def scan(db: Rdict, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
    """Entries with start <= key < end, in key order (None: unbounded).

    rocksdict's iterator reads its upper bound from the ReadOptions it was made with, which it
    does not keep alive: once the options (and the bound's bytes) are freed, the bound is
    whatever reuses that memory and iteration stops early. Compiled code frees a local right
    after its last use, so the bound went wrong there; this generator holds both until the
    iteration ends. (Pure Python is exposed too whenever the iterator outlives the caller's
    frame, as a lazy range does.)
    """
    options = ReadOptions()
    if end is not None:
        options.set_iterate_upper_bound(end)
    entries: Any = db.items(from_key=start, read_opt=options)
    yield from entries
    del options, end  # held until here on purpose
