"""The compiled per-record path: which modules run compiled, and the guard that runs the
sources instead when they changed after the build."""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from pathlib import Path

import pytest

from streamjoin.compiled import (
    MANIFEST,
    SourcesFirst,
    compiled_modules,
    is_compiled,
    run_sources_if_stale,
)


def test_an_up_to_date_build_runs_every_listed_module_compiled() -> None:
    """CI installs with compiling on: the tests must exercise the extensions, not the sources."""
    built = compiled_modules()
    if not built:
        pytest.skip("installed without compiling (STREAMJOIN_COMPILE=0)")
    if any(isinstance(finder, SourcesFirst) for finder in sys.meta_path):
        pytest.skip("sources changed since the build: running them (see the warning)")
    assert "streamjoin.runtime.joins.windowed" in built
    assert [name for name in built if not is_compiled(importlib.import_module(name))] == []


def test_the_manifest_lists_exactly_what_setup_compiles() -> None:
    setup = (Path(__file__).parents[1] / "setup.py").read_text()
    listed = {
        line.strip().strip('",').removesuffix(".py").replace("/", ".")
        for line in setup.split("COMPILED = [", 1)[1].split("]", 1)[0].splitlines()
        if line.strip()
    }
    if not MANIFEST.exists():
        pytest.skip("installed without compiling")
    assert set(compiled_modules()) == listed


def _package(root: Path, source: str) -> Path:
    (root / "fakepkg").mkdir()
    (root / "fakepkg" / "__init__.py").write_text("")
    module = root / "fakepkg" / "mod.py"
    module.write_text(source)
    return module


def test_changed_sources_are_imported_instead_of_the_build(tmp_path: Path) -> None:
    module = _package(tmp_path, "WHERE = 'source as built'\n")
    manifest = tmp_path / "_compiled.json"
    manifest.write_text(json.dumps({"fakepkg.mod": hashlib.sha256(b"older").hexdigest()}))
    finders = list(sys.meta_path)
    try:
        with pytest.warns(UserWarning, match=r"older than their sources \(fakepkg.mod\)"):
            assert run_sources_if_stale(manifest, tmp_path) == ["fakepkg.mod"]
        finder = sys.meta_path[0]
        assert isinstance(finder, SourcesFirst)
        spec = finder.find_spec("fakepkg.mod", None)
        assert spec is not None and spec.origin == str(module)
        assert finder.find_spec("fakepkg.other", None) is None
    finally:
        sys.meta_path[:] = finders


def test_an_unchanged_build_is_left_alone(tmp_path: Path) -> None:
    module = _package(tmp_path, "WHERE = 'source as built'\n")
    manifest = tmp_path / "_compiled.json"
    manifest.write_text(
        json.dumps({"fakepkg.mod": hashlib.sha256(module.read_bytes()).hexdigest()})
    )
    finders = list(sys.meta_path)
    assert run_sources_if_stale(manifest, tmp_path) == []
    assert sys.meta_path == finders
    assert run_sources_if_stale(tmp_path / "missing.json", tmp_path) == []
