"""Worker processes for the demo: `streamjoin worker app:joins`, as a user would start them."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from streamjoin.lifetime import die_with_parent

APP_DIR = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class WorkerProcess:
    def __init__(
        self,
        name: str,
        bootstrap: str,
        work_dir: Path,
        *,
        app: str = "app:joins",
        app_dir: Path = APP_DIR,
    ) -> None:
        """`app` as MODULE:ATTRIBUTE in `app_dir` (default: the ad demo's)."""
        self.name = name
        self.metrics_port = _free_port()
        self.query_url = f"http://127.0.0.1:{_free_port()}"
        self.log_path = work_dir / f"{name}.log"
        self._command = [
            sys.executable,
            "-m",
            "streamjoin",
            "worker",
            app,
            "--app-dir",
            str(app_dir),
            "--bootstrap",
            bootstrap,
            "--state-dir",
            str(work_dir / f"state-{name}"),
            "--metrics-port",
            str(self.metrics_port),
            "--query-port",
            self.query_url.rsplit(":", 1)[1],
            "--commit-interval",
            "1",
        ]
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                self._command,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # noqa: PLW1509 - only prctl, before exec
            )

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def samples(self) -> dict[str, dict[str, float]]:
        """Scraped /metrics: metric name -> {label text: value} (empty if unreachable)."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        found: dict[str, dict[str, float]] = {}
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                text = response.read().decode()
        except OSError:
            return found
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                metric, _, labels = name.partition("{")
                found.setdefault(metric, {})[labels.rstrip("}")] = float(value)
        return found

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (finish, commit, leave the group); SIGKILL if it does not exit in time."""
        if self._process is None:
            return None
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        return self._process.returncode

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def log_tail(self, lines: int = 15) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def totals(samples: dict[str, dict[str, float]]) -> dict[str, float]:
    """Sum of each metric over its labels."""
    return {name: sum(values.values()) for name, values in samples.items()}
