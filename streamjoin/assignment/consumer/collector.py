"""The cyclic garbage collector paused while an assignor runs, and its young collections skipped.

An assignment of 100,000 partitions allocates as many tuples and lists in a fraction of a
second, and CPython starts a young collection every 700 of them, which traverses every young
container in full and, every tenth time, the older generations too. In a fresh process (a group
leader's first rebalance after a restart) that was half of the first call's time: at 1,000
members x 100,000 partitions, sticky's fresh assignment took 124 ms of CPU cold and 56 ms with
the collector paused (bench/assignors.py, its cold call). What an assignor allocates is acyclic and
freed by reference counting, so pausing costs no memory.

Resuming alone would still pay one young collection right after the call, over everything the
call made: at 1,000 x 100,000 the 100,000 partitions of an assignment that makes them (kept in
a per-topic cache), about 5 ms of a 25 ms cold call. Instead every tracked object moves straight
to the oldest generation (`gc.freeze()` then `gc.unfreeze()`, two list splices), where full
collections see it as they would once it had survived the young ones. The price: cyclic garbage
the application made just before the call waits for the next full collection instead of a young
one. Skipped when the application keeps frozen objects of its own (`gc.get_freeze_count()`),
which `unfreeze` would release.
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
    """Disable the cyclic collector for the block; after it, promote what is young to the oldest
    generation and re-enable the collector only if it was enabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def without_collector(function: Callable[P, R]) -> Callable[P, R]:
    """`function` run under `collector_paused`: for assignors' entry points."""

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return function(*args, **kwargs)

    return paused
