"""Tune CPython's cyclic garbage collector for a worker's steady stream of short-lived objects.

With the default thresholds (a young collection every 700 net allocations, a full one every
100 young ones) the collector scans the worker's large, long-lived heap — buffered input
records, the pending non-matches, aiokafka's metadata — over and over: on the ad join it took
about 40% of the worker's CPU (bench/join_throughput.py: 131 -> 76 us per record). A worker
allocates mostly acyclic objects that reference counting frees, so collecting 140x less often
costs little memory (at most 100,000 unreachable cyclic objects wait for a collection).
`gc.freeze()` moves everything alive at start-up (modules, the app) out of the collector's
sight for good.

A young collection costs far more than its object count suggests: it traverses every container
still young in full (a fetched batch's list of 5,000 records, a store's write buffer), so fewer
of them is what pays. With the per-record path compiled, collecting every 10,000 net
allocations still took 0.56 s of the benchmark worker's 5 s (102 young collections averaging
4-5 ms); every 100,000 takes 0.11 s.

Process-wide settings: applied while at least one worker runs in the process, restored after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ("YOUNG_THRESHOLD", "collector_tuned_for_throughput")

YOUNG_THRESHOLD = 100_000
"""Net allocations between young collections (CPython's default: 700)."""

_saved: list[tuple[int, int, int]] = []
"""Thresholds to restore, one entry per worker running in this process."""


@contextmanager
def collector_tuned_for_throughput() -> Iterator[None]:
    """Collect less often while the block runs. Workers may end in any order: every saved entry
    but the first is a tuned one, so the last to end restores the original thresholds."""
    if not _saved:
        gc.freeze()
    threshold = gc.get_threshold()
    _saved.append(threshold)
    young, middle, old = threshold
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
    try:
        yield
    finally:
        gc.set_threshold(*_saved.pop())
        if not _saved:
            gc.unfreeze()
