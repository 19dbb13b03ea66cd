"""The Prometheus endpoint: values that are not finite render, it listens on loopback unless
told otherwise (the worker's and the `--processes` supervisor's), and a scrape whose rendering
fails gets an answer and a closed connection rather than a socket left open."""

from __future__ import annotations

import asyncio
import math
import socket
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamjoin.broker.base import free_port
from streamjoin.metrics import MetricsRegistry, MetricsServer
from streamjoin.runtime.process.supervisor import Supervisor

_LISTEN = "0A"
"""A listening socket's state in /proc/net/tcp."""


def listening_addresses(port: int) -> set[str]:
    """The local addresses something listens on at `port`, from the kernel's socket tables
    (Linux), as the dotted IPv4 or the `::`-free hex of IPv6."""
    found: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        path = Path(table)
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.partition(":")
            if state == _LISTEN and int(hex_port, 16) == port and len(address) == width:
                found.add(_dotted(address) if width == 8 else address)
    return found


def _dotted(little_endian_hex: str) -> str:
    return socket.inet_ntoa(bytes.fromhex(little_endian_hex)[::-1])


needs_proc = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads the socket table of Linux's /proc"
)


def test_values_that_are_not_finite_render_as_prometheus_spells_them() -> None:
    registry = MetricsRegistry()
    values = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "big": 2.0**70}
    registry.register(
        "odd_values",
        "gauge",
        "Values a ratio or an average can take",
        lambda: [((("value", name),), number) for name, number in values.items()],
    )
    text = registry.render()
    lines = text.splitlines()
    assert 'streamjoin_odd_values{value="nan"} NaN' in lines
    assert 'streamjoin_odd_values{value="inf"} +Inf' in lines
    assert 'streamjoin_odd_values{value="-inf"} -Inf' in lines
    (family,) = text_string_to_metric_families(text)
    parsed = {s.labels["value"]: s.value for s in family.samples}
    assert math.isnan(parsed.pop("nan"))
    assert parsed == {"inf": math.inf, "-inf": -math.inf, "big": 2.0**70}


@needs_proc
async def test_the_endpoint_listens_on_loopback_by_default() -> None:
    server = MetricsServer(MetricsRegistry(), free_port("127.0.0.1"))
    await server.start()
    try:
        assert listening_addresses(server.port) == {"127.0.0.1"}
    finally:
        await server.stop()


async def _get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        await writer.drain()
        return await reader.read()  # until the server closes the connection
    finally:
        writer.close()


async def test_a_failing_render_answers_500_and_closes_the_connection() -> None:
    registry = MetricsRegistry()

    def broken() -> list[tuple[tuple[tuple[str, str], ...], float]]:
        raise RuntimeError("a counter's source is gone")

    registry.register("broken", "counter", "A metric whose source fails", broken)
    server = MetricsServer(registry, 0, "127.0.0.1")
    await server.start()
    try:
        for _ in range(3):  # every scrape is answered: nothing is left hanging
            # A generous deadline: only a connection the server leaves open reaches it.
            response = await asyncio.wait_for(_get(server.port), 60)
            assert response.startswith(b"HTTP/1.1 500"), response[:200]
    finally:
        await server.stop()


@needs_proc
async def test_the_supervisors_endpoint_listens_on_loopback_by_default(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    idle = [sys.executable, "-c", f"import pathlib, time; pathlib.Path({str(ready)!r}).touch()"]
    idle[-1] += "; time.sleep(600)"
    port = free_port("127.0.0.1")
    supervisor = Supervisor([], 1, metrics_port=port, command=idle)
    running = asyncio.create_task(supervisor.run())
    try:
        for _ in range(600):
            if ready.exists() and listening_addresses(port):
                break
            await asyncio.sleep(0.1)
        assert listening_addresses(port) == {"127.0.0.1"}
    finally:
        supervisor.stop()
        assert await asyncio.wait_for(running, 60) == 0
