"""A worker process started by `streamjoin worker --processes N` (the supervisor, supervisor.py).

The supervisor passes `STREAMJOIN_SUPERVISED=<its pid>:<index>`. Such a worker stops (commit,
leave, close, as on SIGTERM) when its supervisor is gone: the kernel sends it SIGTERM when the
parent dies (PR_SET_PDEATHSIG, armed by the supervisor before exec on Linux), and a parent-pid
watch here catches the rest (other systems). When the supervisor serves metrics it also passes
PROMETHEUS_MULTIPROC_DIR, and the worker mirrors its metrics and its status there every
second for the host's one endpoint (metrics/multiprocess.py, status_files.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from streamjoin.metrics.multiprocess import MIRROR_INTERVAL_S, MULTIPROC_ENV, ProcessMirror
from streamjoin.runtime.process.status_files import write_status
from streamjoin.runtime.process.worker import Worker

__all__ = ("SUPERVISED_ENV", "SupervisedChild")

logger = logging.getLogger(__name__)

SUPERVISED_ENV = "STREAMJOIN_SUPERVISED"
_WATCH_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class SupervisedChild:
    parent_pid: int
    index: int

    @classmethod
    def from_environ(cls) -> Self | None:
        raw = os.environ.get(SUPERVISED_ENV)
        if not raw:
            return None
        parent, index = raw.split(":", 1)
        return cls(int(parent), int(index))

    def encode(self) -> str:
        return f"{self.parent_pid}:{self.index}"

    async def run(self, worker: Worker) -> None:
        """Run `worker` until it stops, or until the supervisor is gone."""
        tasks = [asyncio.create_task(self._watch_parent(worker), name="parent watch")]
        mirror = None
        if MULTIPROC_ENV in os.environ:
            mirror = ProcessMirror(worker.metrics, str(self.index))
            mirroring = self._mirror_every_second(mirror, worker)
            tasks.append(asyncio.create_task(mirroring, name="metrics"))
        try:
            await worker.run()
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if mirror is not None:
                mirror.sync()  # the final figures

    async def _mirror_every_second(self, mirror: ProcessMirror, worker: Worker) -> None:
        directory = Path(os.environ[MULTIPROC_ENV])
        while True:
            await asyncio.sleep(MIRROR_INTERVAL_S)
            mirror.sync()
            if worker.status is not None:
                write_status(directory, self.index, worker.status.document())

    async def _watch_parent(self, worker: Worker) -> None:
        while True:
            await asyncio.sleep(_WATCH_INTERVAL_S)
            if os.getppid() != self.parent_pid:
                break
        logger.warning("the supervisor (pid %d) is gone: stopping", self.parent_pid)
        worker.stop()
