"""The lock on a task's state directory, held by the one process that has the task open.

The worker processes of a host share one state directory: a task that moves between two of
them reopens its RocksDB files where they are, with no restore. Its new owner may ask for it
while the old one is still closing it (the old owner closes a task it lost at the end of the
rebalance), so the new owner waits for the lock (`flock` on `<task dir>/.lock`, released by
the kernel if its holder dies), logging once, for at most `timeout_s`.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import time
from pathlib import Path

from streamjoin.state.errors import StoreLockedError

__all__ = ("LOCK_FILE", "TaskLock")

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"


class TaskLock:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    async def acquire(
        cls, task_dir: Path, task_id: str, *, timeout_s: float = 60.0, poll_s: float = 0.05
    ) -> TaskLock:
        """Raises StoreLockedError if another process still holds it after `timeout_s`."""
        fd = _open_lock_file(task_dir)
        started = time.monotonic()
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() - started >= timeout_s:
                    os.close(fd)
                    raise StoreLockedError(
                        f"task {task_id}: its state directory {task_dir} stayed locked by "
                        f"another process for {timeout_s:.0f} s (a worker on the same "
                        "--state-dir that does not let go of the task)"
                    ) from None
                if not waited:
                    waited = True
                    logger.info(
                        "task %s: waiting for another process of this host to close its state",
                        task_id,
                    )
                await asyncio.sleep(poll_s)
                continue
            if waited:
                logger.info(
                    "task %s: state handed over after %.1f s",
                    task_id,
                    time.monotonic() - started,
                )
            return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _open_lock_file(task_dir: Path) -> int:
    task_dir.mkdir(parents=True, exist_ok=True)
    return os.open(task_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
