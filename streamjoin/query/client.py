"""`QueryClient`: key lookups for web apps, asked of the key's owner directly.

It learns which member is active for each partition of each store (from /stores, and from every
answer), and which partition each key it asked for lives in, so a repeated key goes straight to
its owner; when that member fails or has moved, it asks the endpoints it was given in turn (any
worker answers for any key, forwarding it) and learns the new owner from the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import aiohttp

from streamjoin.errors import StreamJoinError
from streamjoin.query.paths import DEFAULT_TIMEOUT_S, lookup_path

__all__ = ("QueryClient", "QueryFailed", "endpoint_url")

_NO_ANSWER: dict[str, Any] = {"error": "no endpoint answered"}
_FINAL = (400, 404)
"""Answers no other member would give differently."""


class QueryFailed(StreamJoinError):
    """No member could answer: the last status (0: none answered) and its reason."""

    def __init__(self, status: int, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


def endpoint_url(endpoint: str) -> str:
    """`host:port` or a URL, as a URL without a trailing slash."""
    endpoint = endpoint.strip().rstrip("/")
    return endpoint if "://" in endpoint else f"http://{endpoint}"


class QueryClient:
    def __init__(self, endpoints: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if not endpoints:
            raise ValueError("QueryClient needs at least one endpoint (host:port)")
        self.endpoints = [endpoint_url(e) for e in endpoints]
        self.timeout_s = timeout_s
        self.owners: dict[tuple[str, int], str] = {}
        """(store, partition) -> the query URL of its active member."""
        self.partitions: dict[tuple[str, str], int] = {}
        """(store, key) -> the key's partition, for keys asked before."""
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> QueryClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            )
        return self._session

    async def stores(self) -> dict[str, Any]:
        """GET /stores from the first endpoint that answers; learns every partition's owner."""
        status, body = 0, _NO_ANSWER
        for url in self.endpoints:
            status, body = await self._ask(url, "/stores", {})
            if status == 200:
                for store in body["stores"]:
                    for task in store.get("tasks", ()):
                        if task["active"]:
                            self.owners[store["name"], task["partition"]] = task["active"]
                return body
        raise QueryFailed(status, str(body.get("error")))

    async def get(
        self,
        store: str,
        key: str,
        allow_stale: bool = False,
        *,
        start_ms: int | None = None,
        end_ms: int | None = None,
        as_of_ms: int | None = None,
    ) -> dict[str, Any]:
        """The answer for `key` (see docs/queries.md); window stores take a time
        range, versioned tables the time the value was valid at (IQv2's asOf; default: the
        latest). Raises QueryFailed when no member can answer."""
        params = {"stale": "true" if allow_stale else "false"}
        for name, value in (("from", start_ms), ("to", end_ms), ("as_of", as_of_ms)):
            if value is not None:
                params[name] = str(value)
        partition = self.partitions.get((store, key))
        owner = self.owners.get((store, partition)) if partition is not None else None
        candidates = [owner] if owner else []
        candidates += [url for url in self.endpoints if url != owner]
        status, body, retry_after = 0, _NO_ANSWER, None
        for url in candidates:
            status, body = await self._ask(url, lookup_path(store, key), params)
            if status == 200:
                if body["role"] == "global":  # any endpoint answers it from its own copy
                    return body
                self.partitions[store, key] = body["partition"]
                if body["role"] == "active":
                    self.owners[store, body["partition"]] = body["served_by"]
                return body
            if status == 503:
                retry_after = 1.0
            if status in _FINAL:
                break
        raise QueryFailed(status, str(body.get("error")), retry_after)

    async def range(
        self,
        store: str,
        start: str | None = None,
        end: str | None = None,
        allow_stale: bool = False,
        *,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Keys start <= key < end of an ordered store (a table), from every partition's owner,
        in key order; raises QueryFailed when no member can answer."""
        params = {"stale": "true" if allow_stale else "false"}
        for name, value in (("from", start), ("to", end), ("limit", limit)):
            if value is not None:
                params[name] = str(value)
        status, body = 0, _NO_ANSWER
        for url in self.endpoints:
            status, body = await self._ask(url, f"/stores/{quote(store, safe='')}/keys", params)
            if status == 200 or status in _FINAL:
                break
        if status != 200:
            raise QueryFailed(status, str(body.get("error")))
        return body

    async def _ask(self, url: str, path: str, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        try:
            async with self._http().get(url + path, params=params) as response:
                body = await response.json(content_type=None)
                return response.status, body if isinstance(body, dict) else {}
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            return 0, {"error": f"{url} did not answer: {str(exc) or type(exc).__name__}"}
