"""The cyclic garbage collector paused while an assignor runs.

An assignment of 100,000 partitions allocates as many tuples and lists in a fraction of a
second, and CPython starts a young collection every 700 of them, which traverses every young
container in full and, every tenth time, the older generations too. In a fresh process (a group
leader's first rebalance after a restart) that was half of the first call's time: at 1,000
members x 100,000 partitions, sticky's fresh assignment took 124 ms of CPU cold and 56 ms with
the collector paused (bench/assignors.py --cold). What an assignor allocates is acyclic and
freed by reference counting, so pausing costs no memory; the collector resumes afterwards.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ("collector_paused", "without_collector")

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; re-enable it after only if it was enabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def without_collector(function: Callable[P, R]) -> Callable[P, R]:
    """`function` run under `collector_paused`: for assignors' entry points."""

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return function(*args, **kwargs)

    return paused
