"""A worker process started by `streamjoin worker --processes N` (the supervisor, supervisor.py).

The supervisor passes `STREAMJOIN_SUPERVISED=<its pid>:<index>:<port file>`. Such a worker stops
(commit, leave, close, as on SIGTERM) when its supervisor is gone: the kernel sends it SIGTERM
when the parent dies (PR_SET_PDEATHSIG, armed by the supervisor before exec on Linux), and a
parent-pid watch here catches the rest (other systems). Its metrics are served on an
ephemeral loopback port written to the port file, for the supervisor to merge into the host's
one endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from streamjoin.metrics import MetricsServer
from streamjoin.runtime.process.worker import Worker

__all__ = ("SUPERVISED_ENV", "SupervisedChild")

logger = logging.getLogger(__name__)

SUPERVISED_ENV = "STREAMJOIN_SUPERVISED"
_WATCH_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class SupervisedChild:
    parent_pid: int
    index: int
    port_file: Path

    @classmethod
    def from_environ(cls) -> Self | None:
        raw = os.environ.get(SUPERVISED_ENV)
        if not raw:
            return None
        parent, index, port_file = raw.split(":", 2)
        return cls(int(parent), int(index), Path(port_file))

    def encode(self) -> str:
        return f"{self.parent_pid}:{self.index}:{self.port_file}"

    async def run(self, worker: Worker) -> None:
        """Run `worker` until it stops, or until the supervisor is gone."""
        server = MetricsServer(worker.metrics, 0, host="127.0.0.1")
        await server.start()
        draft = self.port_file.with_suffix(".tmp")
        draft.write_text(str(server.port))
        draft.replace(self.port_file)
        watch = asyncio.create_task(self._watch_parent(worker), name="parent watch")
        try:
            await worker.run()
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
            await server.stop()

    async def _watch_parent(self, worker: Worker) -> None:
        while True:
            await asyncio.sleep(_WATCH_INTERVAL_S)
            if os.getppid() != self.parent_pid:
                break
        logger.warning("the supervisor (pid %d) is gone: stopping", self.parent_pid)
        worker.stop()
