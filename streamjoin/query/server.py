"""The worker's query endpoint: aiohttp in the worker's own event loop.

    GET /stores                          the stores, their kinds, partitions and task placement
    GET /stores/<store>/keys/<key>       one key: ?stale=true accepts a standby's or a restoring
                                         copy; window stores take ?from=<ms>&to=<ms>

Errors are JSON `{"error": "..."}`: 404 unknown store (naming the stores) or key, 400 bad key,
503 with Retry-After when the key's task has no running active and stale reads are not allowed,
502 naming an owner that does not answer, 504 when no answer came within the request timeout.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from streamjoin.assignment.task_metadata import AssignmentInfo
from streamjoin.query.paths import DEFAULT_TIMEOUT_S, FORWARDED_HEADER, lookup_path
from streamjoin.query.service import Lookup, QueryError, QueryService, QueryStats, Unreachable
from streamjoin.query.stores import TimeRange
from streamjoin.runtime.topology import AppTopology
from streamjoin.state.manager import StateManager

__all__ = ("QueryServer", "advertised_url")

logger = logging.getLogger(__name__)

_FOREVER_MS = 2**62
_LATENCIES_KEPT = 4096


def advertised_url(host: str, port: int) -> str:
    """The URL other members reach this one at, for a server bound to `host`:`port`."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"http://{host}:{port}"


class QueryServer:
    def __init__(
        self,
        topology: AppTopology,
        state: StateManager,
        assignment: Callable[[], AssignmentInfo | None],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        advertised: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.service = QueryService(topology, state, assignment, self.forward)
        self.host, self.port = host, port
        self._advertised = advertised
        self.timeout_s = timeout_s
        self.stats = QueryStats()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> str:
        """Bind and serve; returns the advertised URL."""
        app = web.Application()
        app.router.add_get("/stores", self._stores)
        app.router.add_get("/stores/{store}/keys/{key}", self._key)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self._session = aiohttp.ClientSession()
        url = (self._advertised or advertised_url(self.host, self.port)).rstrip("/")
        self.service.url = url
        logger.info("queries on http://%s:%d/stores (advertised as %s)", self.host, self.port, url)
        return url

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _stores(self, request: web.Request) -> web.Response:
        return web.json_response(self.service.listing())

    async def _key(self, request: web.Request) -> web.Response:
        started = time.monotonic()
        query = request.rel_url.query
        try:
            window = TimeRange(_millis(query, "from", 0), _millis(query, "to", _FOREVER_MS))
            lookup = Lookup(
                request.match_info["store"],
                request.match_info["key"],
                window,
                allow_stale=query.get("stale", "false").lower() in ("true", "1", "yes"),
                forwarded=FORWARDED_HEADER in request.headers,
                deadline=started + self.timeout_s,
            )
            answer = await asyncio.wait_for(self.service.lookup(lookup), self.timeout_s)
        except QueryError as exc:
            return self._failed(exc, started)
        except TimeoutError:
            return self._failed(
                QueryError(504, f"no answer within the query timeout ({self.timeout_s:g}s)"),
                started,
            )
        if answer["served_by"] == self.service.url:
            self.stats.served += 1
        else:
            self.stats.forwarded += 1
        self._took(started)
        return web.json_response(answer)

    def _failed(self, error: QueryError, started: float) -> web.Response:
        self.stats.failed += 1
        self._took(started)
        headers = {}
        if error.retry_after_s is not None:
            headers["Retry-After"] = str(error.retry_after_s)
        return web.json_response({"error": error.message}, status=error.status, headers=headers)

    def _took(self, started: float) -> None:
        latencies = self.stats.latencies_s
        latencies.append(time.monotonic() - started)
        if len(latencies) > 2 * _LATENCIES_KEPT:
            del latencies[:_LATENCIES_KEPT]

    async def forward(self, url: str, lookup: Lookup) -> tuple[int, dict[str, Any]]:
        """Ask the member at `url` for `lookup`, within what is left of its time."""
        assert self._session is not None
        left = lookup.deadline - time.monotonic()
        if left <= 0:
            raise Unreachable("no time left")
        params = {"stale": "true" if lookup.allow_stale else "false"}
        if lookup.window.start != 0 or lookup.window.end != _FOREVER_MS:
            params |= {"from": str(lookup.window.start), "to": str(lookup.window.end)}
        try:
            async with self._session.get(
                url + lookup_path(lookup.store, lookup.key),
                params=params,
                headers={FORWARDED_HEADER: "1"},
                timeout=aiohttp.ClientTimeout(total=left),
            ) as response:
                body: dict[str, Any] = await response.json(content_type=None)
                return response.status, body
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise Unreachable(str(exc) or type(exc).__name__) from None


def _millis(query: Any, name: str, default: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise QueryError(400, f"{name}={text!r}: give a time in epoch milliseconds") from None
