"""Serve a registry on GET /metrics over plain asyncio: no web framework for one endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import Protocol

__all__ = ("Exposition", "MetricsServer")

logger = logging.getLogger(__name__)

_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Exposition(Protocol):
    """What the server renders on each scrape: a registry, or metrics gathered at scrape time."""

    def render(self) -> str | Awaitable[str]: ...


class MetricsServer:
    def __init__(self, registry: Exposition, port: int, host: str = "0.0.0.0") -> None:
        self._registry = registry
        self._host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self._host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        logger.info("metrics on http://%s:%d/metrics", self._host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            path = request.split(b" ", 2)[1] if request.count(b" ") >= 2 else b""
            if path.split(b"?")[0] == b"/metrics":
                rendered = self._registry.render()
                text = rendered if isinstance(rendered, str) else await rendered
                status, body, kind = "200 OK", text.encode(), _CONTENT_TYPE
            else:
                status, body, kind = "404 Not Found", b"see /metrics\n", "text/plain"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        writer.close()
