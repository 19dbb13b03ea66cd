"""Tie a child process's life to its parent's, so no broker or worker outlives what started it."""

from __future__ import annotations

import ctypes
import signal

__all__ = ("die_with_parent",)

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Use as `subprocess.Popen(preexec_fn=...)`: the kernel sends the child SIGTERM when the
    thread that started it dies, even by SIGKILL (Linux; runs only prctl before exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
