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
    if directory not in sys.path:
        sys.path.insert(0, directory)
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
