"""Security settings carried to processes on other machines (Spark's Python workers).

The TLS files named on the driver need not exist where a Spark task runs, so their contents
travel with the settings, as one string option, and are written to private files there. The
option's name holds "secret", which Spark's default `spark.redaction.regex` matches: its
value never shows in query plans or the UI. A token provider (OAUTHBEARER) travels pickled.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.security import KafkaSecurity

__all__ = ("OPTION", "ship", "unship")

OPTION = "security_secret"
"""The data source option that carries the settings (its name keeps Spark from showing it)."""

_FILES = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")
_PROVIDER = "sasl_oauth_token_provider"


def ship(security: KafkaSecurity) -> dict[str, str]:
    """Data source options carrying `security` (none for PLAINTEXT)."""
    settings: dict[str, Any] = security.settings()
    if not settings:
        return {}
    for name in _FILES:
        if settings.get(name):
            try:
                settings[name] = Path(settings[name]).read_text()
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot read {name} {settings[name]}: {(exc.strerror or str(exc)).lower()}"
                ) from None
    if settings.get(_PROVIDER) is not None:
        try:
            settings[_PROVIDER] = base64.b64encode(pickle.dumps(settings[_PROVIDER])).decode()
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise ConfigurationError(
                f"the OAUTHBEARER token provider cannot be sent to Spark's workers: {exc}"
            ) from None
    return {OPTION: json.dumps(settings)}


def unship(options: Any) -> KafkaSecurity:
    """The settings `ship` put in `options` (a Spark options mapping), with the TLS files
    written to private files of this process."""
    text = options.get(OPTION)
    if not text:
        return KafkaSecurity()
    settings: dict[str, Any] = json.loads(text)
    if settings.get(_PROVIDER):
        settings[_PROVIDER] = pickle.loads(base64.b64decode(settings[_PROVIDER]))
    for name in _FILES:
        if settings.get(name):
            settings[name] = _written(settings[name])
    return KafkaSecurity(**settings)


def _written(content: str) -> str:
    """`content` in a file only this user can read, named by its hash (written once). Spark's
    tasks in one process may write it at the same moment: each writes a temporary file of its
    own (mkstemp's, mode 0600) and renames it into place."""
    directory = Path(tempfile.gettempdir()) / f"streamjoin-tls-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    if directory.stat().st_uid != os.getuid():
        raise ConfigurationError(f"{directory} belongs to another user; remove it")
    path = directory / hashlib.sha256(content.encode()).hexdigest()[:32]
    if not path.exists():
        with tempfile.NamedTemporaryFile("w", dir=directory, delete=False) as partial:
            partial.write(content)
        os.replace(partial.name, path)
    return str(path)
