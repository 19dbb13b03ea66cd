"""Tie a child process's life to its parent's, so no broker or worker outlives what started it.

`die_with_parent` runs in the forked child before exec, a copy of a parent with many threads
(event loop, RocksDB, Kafka clients): only what is safe there may run. Looking up libc and prctl
takes the dynamic loader's lock, which another thread may have held at the fork, so they are
looked up once here, in the parent; the child only calls prctl."""

from __future__ import annotations

import ctypes
import signal

__all__ = ("die_with_parent",)

_PR_SET_PDEATHSIG = 1
_SIGTERM = int(signal.SIGTERM)
_prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # None off Linux


def die_with_parent() -> None:
    """Use as `subprocess.Popen(preexec_fn=...)`: the kernel sends the child SIGTERM when the
    thread that started it dies, even by SIGKILL (Linux; runs only prctl before exec)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, _SIGTERM, 0, 0, 0)
