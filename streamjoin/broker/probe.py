"""A dependency-free readiness probe: does a Kafka broker answer ApiVersions on this address?

An open TCP port is not enough (the listener can accept before the broker serves requests), and
the probe must not need an event loop, so it speaks the one request itself.
"""

from __future__ import annotations

import socket
import struct

__all__ = ("kafka_api_versions_ok",)

_API_VERSIONS_KEY = 18
_CORRELATION_ID = 0x5EED
_CLIENT_ID = b"streamjoin-probe"


def _request() -> bytes:
    body = struct.pack(">hhih", _API_VERSIONS_KEY, 0, _CORRELATION_ID, len(_CLIENT_ID)) + _CLIENT_ID
    return struct.pack(">i", len(body)) + body


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def accepts_connections(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if something listens on the address (a TLS listener answers nothing in plain)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def kafka_api_versions_ok(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if the address answers an ApiVersions v0 request without error."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(_request())
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            header: tuple[int, int] = struct.unpack(">ih", _recv_exact(sock, min(size, 6)))
    except (OSError, struct.error):
        return False
    return header == (_CORRELATION_ID, 0)
