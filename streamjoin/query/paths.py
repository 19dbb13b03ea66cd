"""What the query server and its clients agree on: paths, headers and the default timeout."""

from __future__ import annotations

from urllib.parse import quote

__all__ = (
    "DEFAULT_LIMIT",
    "DEFAULT_TIMEOUT_S",
    "FORWARDED_HEADER",
    "lookup_path",
    "partition_path",
)

DEFAULT_LIMIT = 1000
"""Entries a key-range query answers at most unless it asks for another `limit`."""

DEFAULT_TIMEOUT_S = 5.0
"""A lookup is answered, or fails, within this many seconds (forwarding included)."""
FORWARDED_HEADER = "X-Streamjoin-Forwarded"
"""Set on a lookup one member forwards to another: answer it from there, never forward it."""


def lookup_path(store: str, key: str) -> str:
    return f"/stores/{quote(store, safe='')}/keys/{quote(key, safe='')}"


def partition_path(store: str, partition: int) -> str:
    return f"/stores/{quote(store, safe='')}/partitions/{partition}/keys"
