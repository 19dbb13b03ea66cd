"""`load_app` finds `module:attribute` in the app directory, even when a module of that name
from another directory was imported before in the same process (two `app.py` files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.dsl.loading import load_app
from streamjoin.errors import ConfigurationError

APP = """
import streamjoin

{name} = streamjoin.App("{app_id}")
"""


def _write(directory: Path, name: str, app_id: str) -> Path:
    directory.mkdir()
    (directory / "app.py").write_text(APP.format(name=name, app_id=app_id))
    return directory


def test_each_app_dir_gives_its_own_app_module(tmp_path: Path) -> None:
    first = _write(tmp_path / "first", "joins", "first-app")
    second = _write(tmp_path / "second", "shop", "second-app")
    assert load_app("app:joins", first).app_id == "first-app"
    assert load_app("app:shop", second).app_id == "second-app"
    assert load_app("app:joins", first).app_id == "first-app"


def test_a_missing_attribute_names_it(tmp_path: Path) -> None:
    directory = _write(tmp_path / "only", "joins", "only-app")
    with pytest.raises(ConfigurationError, match="has no attribute 'app'"):
        load_app("app:app", directory)
