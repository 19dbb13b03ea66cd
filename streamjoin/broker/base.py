"""One broker abstraction for the demo, the CLI and the tests: a local broker process on loopback.

A subclass says how to run its broker (`_command`) and what to clean up (`_cleanup`); this class
picks or checks the port, keeps the broker's output in a log file (whose tail explains a failed
start), waits until the broker answers ApiVersions, and ties the broker's life to its launcher:
it is stopped on `stop()`, at interpreter exit, and by the kernel (PR_SET_PDEATHSIG) if the
launcher dies without cleaning up, so no broker outlives its owner.
"""

from __future__ import annotations

import atexit
import errno
import logging
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Self

from streamjoin.broker.errors import BrokerError, BrokerNotReady, BrokerPortInUse
from streamjoin.broker.probe import kafka_api_versions_ok
from streamjoin.lifetime import die_with_parent

__all__ = ("Broker", "free_port")

logger = logging.getLogger(__name__)

_LOG_TAIL_LINES = 30
_PORT_TAKEN_MARKS = ("AddrInUse", "Address in use", "Address already in use")


def free_port(host: str) -> int:
    """A port that nothing listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port that something listens on. Connections of a broker that just stopped
    linger in TIME_WAIT: like the brokers themselves, the check reuses the address, so a
    restart on the same port works at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise BrokerPortInUse(
                    f"port {port} on {host} is already in use (another broker?): "
                    "choose a free port with --port, or stop the process holding it"
                ) from None
            raise


class Broker(ABC):
    """A broker on loopback; use as a context manager or call start()/stop().

    `port=None` picks a free port. The log goes to `log_path` when given, else to a file that
    `_default_log_path` chooses.
    """

    name: str = "broker"
    """What the broker is, for messages ("Tansu", "Apache Kafka 4.4.0")."""
    stop_timeout: float = 5.0
    """Seconds a SIGTERM gets before SIGKILL."""

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 15.0,
        log_path: Path | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self.started_in: float | None = None
        """Seconds the last start() took, from launch to the first ApiVersions answer."""

    @abstractmethod
    def _command(self) -> list[str]:
        """The command line that runs the broker on self.host:self.port (prepares what it needs)."""

    @abstractmethod
    def _default_log_path(self) -> Path:
        """Where the broker's output goes when no log_path was given."""

    def _cleanup(self) -> None:
        """Remove what the broker left that nobody asked to keep (after it stopped)."""

    @property
    def bootstrap(self) -> str:
        """The bootstrap address clients connect to, e.g. "127.0.0.1:9092"."""
        if self.port is None:
            raise BrokerError("the broker has not been started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> str:
        """Start the broker and wait until it answers Kafka requests; returns the bootstrap."""
        if self.is_running():
            return self.bootstrap
        began = time.monotonic()
        if self.port is None:
            self.port = free_port(self.host)
        else:
            _check_port_free(self.host, self.port)
        atexit.register(self.stop)
        try:
            command = self._command()
            if self._log_path is None:
                self._log_path = self._default_log_path()
            with open(self._log_path, "ab") as log:
                self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=die_with_parent,  # noqa: PLW1509 - only prctl, before exec
                )
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        logger.info(
            "%s ready on %s in %.1f s (pid %d)",
            self.name,
            self.bootstrap,
            self.started_in,
            self._process.pid,
        )
        return self.bootstrap

    def _wait_ready(self) -> None:
        assert self._process is not None and self.port is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                tail = self.log_tail()
                if any(mark in tail for mark in _PORT_TAKEN_MARKS):
                    raise BrokerPortInUse(
                        f"port {self.port} on {self.host} was taken while the broker started: "
                        "choose another port with --port"
                    )
                raise BrokerNotReady(
                    f"{self.name} exited with status {code} while starting:\n{tail}"
                )
            if kafka_api_versions_ok(self.host, self.port, timeout=0.5):
                return
            time.sleep(0.02)
        raise BrokerNotReady(
            f"{self.name} did not answer on {self.bootstrap} within {self.startup_timeout:g} s; "
            f"last lines of its log ({self._log_path}):\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        if self._log_path is None or not self._log_path.exists():
            return "(no log)"
        with open(self._log_path, errors="replace") as log:
            return "".join(deque(log, maxlen=lines)).rstrip() or "(log is empty)"

    def stop(self, timeout: float | None = None) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after `timeout`); safe to call twice."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(self.stop_timeout if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._cleanup()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
