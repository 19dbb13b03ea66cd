"""Find a user's App from "module:attribute", the way uvicorn finds an ASGI app."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from streamjoin.dsl.app import App
from streamjoin.errors import ConfigurationError

__all__ = ("load_app",)


def load_app(reference: str, app_dir: Path | str = ".") -> App:
    """Import `module:attribute` with `app_dir` first on the import path; the attribute must be
    a streamjoin App (`attribute` may be dotted)."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigurationError(
            f"app reference {reference!r} must look like MODULE:ATTRIBUTE, e.g. app:joins"
        )
    directory = str(Path(app_dir).resolve())
    if directory in sys.path:
        sys.path.remove(directory)
    sys.path.insert(0, directory)
    _forget_other(module_name.partition(".")[0], Path(directory))
    try:
        target: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigurationError(
                f"cannot import module {module_name!r} from {directory} "
                "(run from the directory holding it, or pass --app-dir)"
            ) from None
        raise
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigurationError(f"module {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not isinstance(target, App):
        raise ConfigurationError(f"{reference} is a {type(target).__name__}, not a streamjoin.App")
    return target


def _forget_other(top: str, directory: Path) -> None:
    """Drop an imported module named `top` (and its submodules) that is not the one in
    `directory`, when `directory` holds one: an app loaded before in this process (another
    `app.py`) must not stand in for it."""
    loaded = sys.modules.get(top)
    if loaded is None:
        return
    here = [directory / f"{top}.py", directory / top / "__init__.py"]
    source = getattr(loaded, "__file__", None)
    if not any(path.exists() for path in here) or (
        source is not None and Path(source).resolve() in here
    ):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
        del sys.modules[name]
