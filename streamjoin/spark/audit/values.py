"""A value in a form that is equal exactly when two values mean the same.

A field mapping's JSON comes from Spark's writer, the workers' from Python's: the same object may
be spelled differently (escaped non-ASCII, 1.0 vs 1.0E0, another key order). Values whose bytes
differ are decoded with the output topic's serde and written again as sorted JSON (their repr
when JSON cannot hold them); only those rows go through Python.
"""

from __future__ import annotations

import json

import msgspec

from streamjoin.dsl.serdes import Serde, SerdeError

__all__ = ("canonical_text",)


def canonical_text(serde: Serde, raw: bytes | None) -> str | None:
    """The canonical text of a value (None for a tombstone; the bytes in hex for a value the
    serde cannot decode)."""
    if raw is None:
        return None
    try:
        value = serde.deserialize(raw)
    except SerdeError:
        return f"undecodable {raw.hex()}"
    try:
        return json.dumps(msgspec.to_builtins(value), sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)
