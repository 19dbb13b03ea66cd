"""Serve metrics on GET /metrics with prometheus_client's aiohttp handler, in the worker's own
event loop (a scrape reads the worker's counters where they change, never from another
thread), on loopback unless told otherwise. A scrape whose rendering fails is answered 500 and
logged by aiohttp; the connection is closed as any other.

The same endpoint answers GET /status with the worker's live state as JSON, when given one
(runtime/process/status.py; `streamjoin status` reads it): one endpoint per host, as the
metrics are, so `--processes N` answers for all its processes in one place."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler
from prometheus_client.registry import Collector

__all__ = ("MetricsServer", "StatusSource", "advertised_url")

logger = logging.getLogger(__name__)

StatusSource = Callable[[], dict[str, Any]]
"""What GET /status answers (JSON), read at each request."""


def advertised_url(host: str, port: int) -> str:
    """The URL other hosts reach a server bound to `host`:`port` at."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"http://{host}:{port}"


class MetricsServer:
    def __init__(
        self,
        registry: Collector,
        port: int,
        host: str = "127.0.0.1",
        status: StatusSource | None = None,
    ) -> None:
        """`registry`: what each scrape renders (a MetricsRegistry, or a CollectorRegistry of
        several); `port` 0 takes a free one (then `port` says which once started); `status`:
        what GET /status answers (none: 404)."""
        if not isinstance(registry, CollectorRegistry):
            wrapped = CollectorRegistry(auto_describe=False)
            wrapped.register(registry)
            registry = wrapped
        self._registry = registry
        self._host = host
        self.port = port
        self._status = status
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", make_aiohttp_handler(self._registry))
        if self._status is not None:
            app.router.add_get("/status", self._answer_status)
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        logger.info("metrics on http://%s:%d/metrics", self._host, self.port)

    @property
    def url(self) -> str:
        return advertised_url(self._host, self.port)

    async def _answer_status(self, request: web.Request) -> web.Response:
        assert self._status is not None
        return web.json_response(self._status())

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
