"""`streamjoin worker --processes N`: N worker processes of one host, one client of the group.

The supervisor runs each worker as a child process of the same command (`python -m streamjoin
worker ...` with the same options, minus the ones the supervisor handles), rather than a
`multiprocessing` child: a child is then exactly a worker as users run it (every option,
signal handling, exit status and error line), the supervisor needs to know none of the
worker's options, and the children's output comes through pipes that it prefixes with the
process index. All children use the same state directory, hence the same process id.

- SIGTERM/SIGINT: forwarded as SIGTERM to every child (each hands its tasks off warm, commits,
  leaves the group, closes its stores); exit 0 once all have ended. A second signal is
  forwarded too (each leaves without waiting for the hand-off), a third kills them at once
  (exit 130).
  Children run in their own session, so a terminal's Ctrl-C reaches them only through here.
- A child that dies is restarted (same process id: same state directory) after a backoff; if
  children die `max_deaths` times within `window_s` (all together), or one exits with status
  2 (refused: bad settings, missing topics), the rest are stopped and the supervisor exits
  non-zero with one line naming the dead child's last error.
- `--metrics-port`: one endpoint for the host (on `--metrics-host`, loopback by default) with
  every child's metrics, through prometheus_client's multiprocess mode (metrics/multiprocess.py),
  and their status in one GET /status (status_files.py); each child advertises its URL to the
  group (`--advertised-metrics-url`, given or the endpoint's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from streamjoin.lifetime import die_with_parent
from streamjoin.metrics import MetricsRegistry, MetricsServer
from streamjoin.metrics.multiprocess import (
    MULTIPROC_ENV,
    host_registry,
    prepare_directory,
    process_exited,
)
from streamjoin.runtime.process.status_files import forget_status, host_status
from streamjoin.runtime.process.supervised import SUPERVISED_ENV, SupervisedChild

__all__ = ("RestartPolicy", "Supervisor")

logger = logging.getLogger(__name__)

_REFUSED = 2
"""A worker's exit status for settings or topics it refuses: restarting would not help."""
_LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d [\d:,]+ ([A-Z]+) ")
"""A line of the worker's log (streamjoin.cli.main's format), and its level."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    max_deaths: int = 5
    window_s: float = 300.0
    first_backoff_s: float = 1.0
    max_backoff_s: float = 30.0


@dataclass(slots=True)
class _Child:
    index: int
    process: asyncio.subprocess.Process | None = None
    last_error: str = ""
    restarts: int = 0


class Supervisor:
    def __init__(
        self,
        worker_args: Sequence[str],
        processes: int,
        *,
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
        metrics_dir: Path | None = None,
        policy: RestartPolicy | None = None,
        instance_id: str | None = None,
        advertised_metrics_url: str | None = None,
        command: Sequence[str] = (sys.executable, "-m", "streamjoin", "worker"),
    ) -> None:
        """`worker_args`: the arguments every child gets after `command`; `metrics_dir`: where
        the children's metrics meet (emptied at start; a temporary directory by default)."""
        self.command = [*command, *worker_args]
        self.policy = policy or RestartPolicy()
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self._metrics_dir = metrics_dir
        self.instance_id = instance_id
        self.advertised_metrics_url = advertised_metrics_url
        self.children = [_Child(i) for i in range(processes)]
        self._stopping = asyncio.Event()
        self._deaths: deque[float] = deque()
        """When children died, over the last `policy.window_s`."""
        self._signals = 0
        self._failure: str | None = None
        self._failure_status = 1
        self.registry = MetricsRegistry()
        self.registry.register(
            "process_restarts_total",
            "counter",
            "Worker processes the supervisor restarted after they died, by process",
            lambda: [((("process", str(c.index)),), float(c.restarts)) for c in self.children],
        )

    async def run(self) -> int:
        """Run until stopped (0), or until children keep dying (non-zero, one line on stderr)."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal)
        server = None
        if self.metrics_port is None:
            self._metrics_dir = None  # the children keep their metrics to themselves
        else:
            self._metrics_dir = prepare_directory(
                self._metrics_dir or Path(tempfile.mkdtemp(prefix="streamjoin-metrics-"))
            )
            directory = self._metrics_dir
            server = MetricsServer(
                host_registry(directory, self.registry),
                self.metrics_port,
                self.metrics_host,
                status=lambda: host_status(directory),
            )
            await server.start()
            self.advertised_metrics_url = self.advertised_metrics_url or server.url
        try:
            await asyncio.gather(*(self._keep_running(child) for child in self.children))
        finally:
            if server is not None:
                await server.stop()
            if self._metrics_dir is not None:
                shutil.rmtree(self._metrics_dir, ignore_errors=True)
        if self._failure is not None:
            print(f"error: {self._failure}", file=sys.stderr, flush=True)
            return self._failure_status
        return 0

    def stop(self) -> None:
        """Stop every child gracefully (as the first SIGTERM does)."""
        self._stopping.set()
        self._signal_children(signal.SIGTERM)

    # -- internals ------------------------------------------------------------------------------

    def _on_signal(self) -> None:
        self._signals += 1
        if self._signals > 2:
            self._signal_children(signal.SIGKILL)
            os._exit(130)
        if self._signals == 1:
            logger.info("stopping %d worker processes", len(self.children))
        else:
            logger.info("stopping %d worker processes without the hand-off", len(self.children))
        self.stop()

    def _signal_children(self, signum: int) -> None:
        for child in self.children:
            if child.process is not None and child.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signum)

    async def _keep_running(self, child: _Child) -> None:
        backoff = self.policy.first_backoff_s
        while not self._stopping.is_set():
            started = time.monotonic()
            status = await self._run_child(child)
            if self._stopping.is_set():
                return
            now = time.monotonic()
            self._deaths.append(now)
            while now - self._deaths[0] > self.policy.window_s:
                self._deaths.popleft()
            cause = _describe(status) + (f": {child.last_error}" if child.last_error else "")
            if status == _REFUSED:
                self._fail(f"process {child.index} refused to run: {cause}", _REFUSED)
                return
            if len(self._deaths) >= self.policy.max_deaths:
                self._fail(
                    f"worker processes died {len(self._deaths)} times within "
                    f"{self.policy.window_s:.0f} s; the last, process {child.index}: {cause}",
                    1,
                )
                return
            if now - started > self.policy.window_s:
                backoff = self.policy.first_backoff_s
            logger.warning(
                "worker process %d ended (status %s: %s); restarting in %.1f s",
                child.index,
                status,
                cause,
                backoff,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), backoff)
            backoff = min(backoff * 2, self.policy.max_backoff_s)
            child.restarts += 1

    def _fail(self, message: str, status: int) -> None:
        if self._failure is None:
            self._failure, self._failure_status = message, status
        self.stop()

    async def _run_child(self, child: _Child) -> int:
        supervised = SupervisedChild(os.getpid(), child.index)
        env = {**os.environ, SUPERVISED_ENV: supervised.encode()}
        env.pop(MULTIPROC_ENV, None)  # another program's, or ours when serving metrics
        if self._metrics_dir is not None:
            env[MULTIPROC_ENV] = str(self._metrics_dir)
        args = list(self.command)
        if self.instance_id is not None:
            args += ["--instance-id", f"{self.instance_id}-{child.index}"]
        if self.advertised_metrics_url is not None:
            args += ["--advertised-metrics-url", self.advertised_metrics_url]
        child.last_error = ""
        process = await asyncio.create_subprocess_exec(
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        child.process = process
        logger.info("worker process %d started (pid %d)", child.index, process.pid)
        assert process.stdout is not None and process.stderr is not None
        await asyncio.gather(
            _relay(process.stdout, sys.stdout.buffer, child, remember=False),
            _relay(process.stderr, sys.stderr.buffer, child, remember=True),
        )
        status = await process.wait()
        if self._metrics_dir is not None:
            process_exited(self._metrics_dir, process.pid)
            forget_status(self._metrics_dir, child.index)
        return status


async def _relay(
    stream: asyncio.StreamReader, out: BinaryIO, child: _Child, *, remember: bool
) -> None:
    """Copy a child's output line by line, prefixed with its index; keep its last error line."""
    prefix = f"[{child.index}] ".encode()
    while line := await stream.readline():
        out.write(prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
        out.flush()
        text = line.decode(errors="replace").strip()
        if remember and _is_error(text):
            child.last_error = text


def _is_error(line: str) -> bool:
    """An error logged, or a line outside the log (an exception's last line, a one-line error
    of the CLI) that names one."""
    logged = _LOG_LINE.match(line)
    if logged is not None:
        return logged.group(1) in ("ERROR", "CRITICAL")
    return "rror" in line or "Exception" in line


def _describe(status: int) -> str:
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return f"exit status {status}"
