"""One worker (or one `--processes` supervisor) per state directory of an app.

Two workers started on one `--state-dir` would tell the group one process id, fence each
other's transactions and fight over every store's RocksDB lock, so the second is refused at
once, with the holder named: the first takes `flock` on `<state_dir>/<app_id>/worker.lock`
(released by the kernel when it dies) and writes its pid and host into it. The processes of
one host share a directory only under one supervisor, which holds the lock for them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from streamjoin.state.errors import StateDirInUseError

__all__ = ("WORKER_LOCK_FILE", "holding_state_dir")

WORKER_LOCK_FILE = "worker.lock"


@contextlib.contextmanager
def holding_state_dir(state_dir: Path, app_id: str) -> Iterator[None]:
    """Hold the app's state directory for this process, or raise StateDirInUseError naming the
    worker that holds it."""
    app_dir = Path(state_dir) / app_id
    app_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(app_dir / WORKER_LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            raise StateDirInUseError(
                f"--state-dir {state_dir} is in use by another streamjoin worker of app "
                f"{app_id}{f' ({holder})' if holder else ''}: give each worker its own "
                "--state-dir (the processes of one host share one only as "
                "`streamjoin worker --processes N`)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
