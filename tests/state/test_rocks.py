from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.state.errors import StateError, StoreLockedError
from streamjoin.state.rocks import open_rocksdb


def test_opens_raw_and_refuses_a_second_handle(tmp_path: Path) -> None:
    db = open_rocksdb(tmp_path / "s")
    db.put(b"k", b"v")
    with pytest.raises(StoreLockedError, match="own --state-dir"):
        open_rocksdb(tmp_path / "s")
    db.close()
    again = open_rocksdb(tmp_path / "s")
    assert again.get(b"k") == b"v"
    again.close()


def test_unreadable_files_raise_state_error(tmp_path: Path) -> None:
    open_rocksdb(tmp_path / "s").close()
    (tmp_path / "s" / "CURRENT").write_text("junk\n")
    with pytest.raises(StateError, match="cannot open state store"):
        open_rocksdb(tmp_path / "s")
