"""The worker's query endpoint: aiohttp in the worker's own event loop.

    GET /stores                          the stores, their kinds, partitions and task placement
    GET /stores/<store>/keys/<key>       one key: ?stale=true accepts a standby's or a restoring
                                         copy; window stores take ?from=<ms>&to=<ms>, versioned
                                         tables ?as_of=<ms> (the value valid then)
    GET /stores/<store>/keys             keys ?from=<key>&to=<key>&limit=<n> of ordered stores

Errors are JSON `{"error": "..."}`: 404 unknown store (naming the stores) or key, 400 bad key,
503 with Retry-After when the key's task has no running active and stale reads are not allowed,
502 naming an owner that does not answer, 504 when no answer came within the request timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

import aiohttp
import msgspec
from aiohttp import web

from streamjoin.assignment.task_metadata import AssignmentInfo
from streamjoin.metrics.server import advertised_url
from streamjoin.query.paths import (
    DEFAULT_LIMIT,
    DEFAULT_TIMEOUT_S,
    FORWARDED_HEADER,
    lookup_path,
    partition_path,
)
from streamjoin.query.service import QueryError, QueryService, QueryStats, Request, Unreachable
from streamjoin.query.stores import FOREVER_MS, KeyQuery
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.runtime.topology.app_topology import AppTopology
from streamjoin.state.manager import StateManager

__all__ = ("QueryServer",)

logger = logging.getLogger(__name__)

_REPLY_MARGIN_S = 0.25
"""A forwarded request gives up this long before the request's timeout: time to say which
member did not answer (502) rather than only that the time ran out (504)."""
_LATENCIES_KEPT = 4096


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
        global_tables: GlobalTables | None = None,
    ) -> None:
        self.service = QueryService(topology, state, assignment, self.forward, global_tables)
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
        app.router.add_get("/stores/{store}/keys", self._range)
        app.router.add_get("/stores/{store}/keys/{key}", self._key)
        app.router.add_get("/stores/{store}/partitions/{partition}/keys", self._partition)
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

    def _request(self, request: web.Request, path: str, *names: str) -> Request:
        query = request.rel_url.query
        return Request(
            request.match_info["store"],
            path,
            {name: query[name] for name in names if name in query},
            allow_stale=query.get("stale", "false").lower() in ("true", "1", "yes"),
            forwarded=FORWARDED_HEADER in request.headers,
            deadline=time.monotonic() + self.timeout_s,
        )

    async def _key(self, request: web.Request) -> web.Response:
        store, key = request.match_info["store"], request.match_info["key"]
        query = request.rel_url.query

        async def answer() -> dict[str, Any]:
            as_of = _number(query, "as_of", 0) if "as_of" in query else None
            what = KeyQuery(_number(query, "from", 0), _number(query, "to", FOREVER_MS), as_of)
            asked = self._request(request, lookup_path(store, key), "from", "to", "as_of")
            return await self.service.lookup(asked, key, what)

        return await self._answered(answer())

    async def _partition(self, request: web.Request) -> web.Response:
        return await self._answered(self._partition_range(request))

    async def _partition_range(self, request: web.Request) -> dict[str, Any]:
        query = request.rel_url.query
        text = request.match_info["partition"]
        if not text.isdigit():
            raise QueryError(404, f"partition {text!r}: give a partition number")
        asked = self._request(request, request.rel_url.path, "from", "to", "limit")
        limit = _number(query, "limit", DEFAULT_LIMIT)
        return await self.service.partition_range(
            asked, int(text), query.get("from"), query.get("to"), limit
        )

    async def _range(self, request: web.Request) -> web.Response:
        """Every partition's keys in the range, asked of their members at once, in key order."""
        store = request.match_info["store"]

        async def answer() -> dict[str, Any]:
            query = request.rel_url.query
            limit = _number(query, "limit", DEFAULT_LIMIT)
            if self.service.store(store).is_global:  # this worker's copy has every key
                return self.service.global_range(store, query.get("from"), query.get("to"), limit)
            partitions = self.service.partitions(store)
            answers = await asyncio.gather(
                *(
                    self.service.partition_range(
                        self._request(request, partition_path(store, p), "from", "to", "limit"),
                        p,
                        query.get("from"),
                        query.get("to"),
                        limit,
                    )
                    for p in range(partitions)
                )
            )
            entries = [
                {**entry, **{k: v for k, v in part.items() if k not in ("store", "entries")}}
                for part in answers
                for entry in part["entries"]
            ]
            entries.sort(key=lambda e: msgspec.json.encode(e["key"]))
            return {
                "store": store,
                "entries": entries[:limit],
                "truncated": len(entries) > limit,
                "served_by": self.service.url,
            }

        return await self._answered(answer())

    async def _answered(self, answering: Coroutine[Any, Any, dict[str, Any]]) -> web.Response:
        """The answer as JSON, or its error; counted, timed, and bounded by the timeout."""
        started = time.monotonic()
        try:
            answer = await asyncio.wait_for(answering, self.timeout_s)
        except QueryError as exc:
            return self._failed(exc, started)
        except TimeoutError:
            return self._failed(
                QueryError(504, f"no answer within the query timeout ({self.timeout_s:g}s)"),
                started,
            )
        except Exception as exc:  # one JSON line for the client; the traceback in the log
            logger.exception("query failed")
            return self._failed(QueryError(500, f"the query failed: {exc}"), started)
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

    async def forward(self, url: str, request: Request) -> tuple[int, dict[str, Any]]:
        """Ask the member at `url` the same, within what is left of the request's time."""
        assert self._session is not None
        left = request.deadline - time.monotonic() - _REPLY_MARGIN_S
        if left <= 0:
            raise Unreachable("no time left")
        params = {**request.params, "stale": "true" if request.allow_stale else "false"}
        try:
            async with self._session.get(
                url + request.path,
                params=params,
                headers={FORWARDED_HEADER: "1"},
                timeout=aiohttp.ClientTimeout(total=left),
            ) as response:
                body: dict[str, Any] = await response.json(content_type=None)
                return response.status, body
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            reason = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
            raise Unreachable(reason or type(exc).__name__) from None


def _number(query: Any, name: str, default: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        what = "a number of keys" if name == "limit" else "a time in epoch milliseconds"
        raise QueryError(400, f"{name}={text!r}: give {what}") from None
