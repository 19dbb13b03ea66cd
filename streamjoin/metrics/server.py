"""Serve metrics on GET /metrics with prometheus_client's aiohttp handler, in the worker's own
event loop (a scrape reads the worker's counters where they change, never from another
thread), on loopback unless told otherwise. A scrape whose rendering fails is answered 500 and
logged by aiohttp; the connection is closed as any other."""

from __future__ import annotations

import logging

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler
from prometheus_client.registry import Collector

__all__ = ("MetricsServer",)

logger = logging.getLogger(__name__)


class MetricsServer:
    def __init__(self, registry: Collector, port: int, host: str = "127.0.0.1") -> None:
        """`registry`: what each scrape renders (a MetricsRegistry, or a CollectorRegistry of
        several); `port` 0 takes a free one (then `port` says which once started)."""
        if not isinstance(registry, CollectorRegistry):
            wrapped = CollectorRegistry(auto_describe=False)
            wrapped.register(registry)
            registry = wrapped
        self._registry = registry
        self._host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", make_aiohttp_handler(self._registry))
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

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
