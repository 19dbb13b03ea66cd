"""Which of streamjoin's modules run compiled, and a guard against extensions older than their
sources.

setup.py compiles the per-record path with mypyc and records a digest of each compiled source
in `_compiled.json`. An editable install builds the extensions next to their sources, where
they shadow them: after a source changes, its extension would go on running the old code. So
when any compiled source no longer matches its digest, every compiled module is imported from
source instead (correct, only slower; compiled modules reach into each other's classes, so it
is all or none) and a warning says how to rebuild.

This module must stay pure Python and be imported before any compiled one (the package's
`__init__` does).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ("build_description", "compiled_modules", "is_compiled", "run_sources_if_stale")

_PACKAGE_DIR = Path(__file__).resolve().parent
MANIFEST = _PACKAGE_DIR / "_compiled.json"
"""Written by setup.py when it compiles: module name -> SHA-256 of the source it compiled."""


def _source_of(module: str, root: Path) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compiled_modules(manifest: Path = MANIFEST) -> dict[str, str]:
    """Module name -> digest of the source it was compiled from; empty for a pure install."""
    try:
        built: dict[str, str] = json.loads(manifest.read_text())
    except FileNotFoundError:
        return {}
    return built


def is_compiled(module: ModuleType) -> bool:
    """Whether `module` runs as an extension (its file is not Python source)."""
    return not str(getattr(module, "__file__", "")).endswith(".py")


class SourcesFirst:
    """A meta path finder that loads the named modules from their `.py` files."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


def run_sources_if_stale(manifest: Path = MANIFEST, root: Path = _PACKAGE_DIR.parent) -> list[str]:
    """If a compiled module's source under `root` changed since the build, import every
    compiled module from source from now on; returns the changed ones."""
    built = compiled_modules(manifest)
    sources = {module: _source_of(module, root) for module in built}
    stale = sorted(
        module
        for module, source in sources.items()
        if source.exists() and _digest(source) != built[module]
    )
    if stale:
        sys.meta_path.insert(0, SourcesFirst(sources))
        warnings.warn(
            f"streamjoin's compiled modules are older than their sources ({', '.join(stale)}): "
            "running the sources instead, which is slower. Rebuild with `make` or "
            "`pip install -e .` (set STREAMJOIN_COMPILE=0 to install without compiling).",
            stacklevel=2,
        )
    return stale


def build_description() -> str:
    """How the per-record path runs in this process, for logs and benchmark reports."""
    built = compiled_modules()
    if not built:
        return (
            "pure Python, slower per record (installed without a working C compiler, or with "
            "STREAMJOIN_COMPILE=0; reinstall with gcc and python3-dev to compile)"
        )
    if any(isinstance(finder, SourcesFirst) for finder in sys.meta_path):
        return "pure Python (sources changed since the build: rebuild to compile them)"
    return f"compiled with mypyc ({len(built)} modules)"
