from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.state.errors import StateError, StoreLockedError
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.stores.rocks import open_rocksdb, scan

OPTIONS = MemoryBudget().options("s")


def test_opens_raw_and_refuses_a_second_handle(tmp_path: Path) -> None:
    db = open_rocksdb(tmp_path / "s", OPTIONS)
    db.put(b"k", b"v")
    with pytest.raises(StoreLockedError, match=r"in use by another process .*--state-dir"):
        open_rocksdb(tmp_path / "s", OPTIONS)
    db.close()
    again = open_rocksdb(tmp_path / "s", OPTIONS)
    assert again.get(b"k") == b"v"
    again.close()


def test_unreadable_files_raise_state_error(tmp_path: Path) -> None:
    open_rocksdb(tmp_path / "s", OPTIONS).close()
    (tmp_path / "s" / "CURRENT").write_text("junk\n")
    with pytest.raises(StateError, match="cannot open state store"):
        open_rocksdb(tmp_path / "s", OPTIONS)


def test_scan_keeps_its_upper_bound_until_the_scan_ends(tmp_path: Path) -> None:
    """The bound is built for the scan alone and nothing else holds it; memory churn between
    starting and finishing the scan must not move it (rocksdict does not keep it alive)."""
    db = open_rocksdb(tmp_path / "s", OPTIONS)
    for i in range(1_000):
        db[b"k%04d" % i] = b"v" * 50
    prefix = b"k"
    entries = scan(db, prefix + b"0100", prefix + b"0900")
    churn = [prefix + b"%04d" % i for i in range(10_000)]
    assert [key for key, _ in entries] == [b"k%04d" % i for i in range(100, 900)]
    assert [key for key, _ in scan(db, None, None)] == sorted(churn[:1_000])
    db.close()
