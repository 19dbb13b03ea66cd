"""Which processes a test started are still running (Linux's /proc), for the tests that check a
child ends with what started it."""

from __future__ import annotations

from pathlib import Path

__all__ = ("alive", "children")


def children(pid: int) -> set[int]:
    """The child processes of `pid`'s main thread now."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie has ended, only its parent has not reaped it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status
