"""Tune CPython's cyclic garbage collector for a worker's steady stream of short-lived objects.

With the default thresholds (a young collection every 700 net allocations, a full one every
100 young ones) the collector scans the worker's large, long-lived heap — buffered input
records, the pending non-matches, aiokafka's metadata — over and over: on the ad join it took
about 40% of the worker's CPU (bench/join_throughput.py: 131 -> 76 us per record). A worker
allocates mostly acyclic objects that reference counting frees, so collecting less often costs
little memory. `gc.freeze()` moves everything alive at start-up (modules, the app) out of the
collector's sight for good.

The objects that outlive a young collection cost most: a windowed join at 6,000 records/s
holds about a million tracked objects (the newest records, their decoded values, the pending
non-matches), and each was traversed again by every middle and full collection: a middle one
took 0.58 s of CPU (0.8-1.2 s of wall time on a loaded 2-core machine) every 25 s, the worst
stall of a live worker. So a young collection's survivors are frozen at once (`gc.freeze()`
after it, a constant-time list splice): a collection only sees what was allocated since the
previous one, and its cost per allocation no longer depends on how often it runs. Young
collections then come every 10,000 net allocations. Measured in one minute of the ad join at
6,000 records/s: the longest young collection took 18 ms of CPU (102 ms at 100,000 without
freezing), the longest middle one 2 ms (581 ms), all of them 0.68 s (1.12 s).

CPython starts a young collection when its count of net allocations (tracked objects allocated
less those freed) passes the threshold. In a steady state, with memory flat, a worker frees
about as many objects as it allocates, most of them frozen ones (a window record evicted, a
pending non-match emitted): the count then stays under the threshold while the survivors pile
up unfrozen, until a burst of allocations (a commit's flush) passes it, and that collection
traverses all of them: at 6,000 records/s, 166,000 objects, 99 ms at every 5 s commit. So the
worker's loop also collects the young generation every `YOUNG_INTERVAL_S`
(`collect_young_when_due`): a few milliseconds of it at a time instead.

What frozen objects free by reference counting is freed as before; only a cycle alive at a
freeze that became garbage later waits, until `reclaim_frozen_garbage` (called by the worker's
loop) unfreezes everything and runs one full collection, every `RECLAIM_INTERVAL_S`. Measured
at 6,000 records/s: about 80 such objects a minute (kilobytes), and a full collection of the
million objects took 0.7 s of CPU: so once an hour, one stall an hour instead of one of that
size every few minutes under CPython's own schedule.

Process-wide settings: applied while at least one worker runs in the process, restored after.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = (
    "RECLAIM_INTERVAL_S",
    "YOUNG_INTERVAL_S",
    "YOUNG_THRESHOLD",
    "collect_young_when_due",
    "collector_tuned_for_throughput",
    "reclaim_frozen_garbage",
)

logger = logging.getLogger(__name__)

YOUNG_THRESHOLD = 10_000
"""Net allocations between young collections (CPython's default: 700)."""
YOUNG_INTERVAL_S = 0.1
"""Most seconds between young collections, however few the net allocations."""
RECLAIM_INTERVAL_S = 3_600.0
"""Seconds between full collections of the frozen objects (cycles among them)."""

_saved: list[tuple[int, int, int]] = []
"""Thresholds to restore, one entry per worker running in this process."""
_next_reclaim = [0.0]
"""Monotonic time of the next `reclaim_frozen_garbage`."""
_next_young = [0.0]
"""Monotonic time of the next `collect_young_when_due`."""


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    """gc callback: what a young or middle collection left alive is out of sight from now on."""
    if phase == "stop" and info["generation"] < 2:
        gc.freeze()


@contextmanager
def collector_tuned_for_throughput() -> Iterator[None]:
    """Collect less often while the block runs. Workers may end in any order: every saved entry
    but the first is a tuned one, so the last to end restores the original thresholds."""
    if not _saved:
        gc.freeze()
        gc.callbacks.append(_freeze_survivors)
        _next_reclaim[0] = time.monotonic() + RECLAIM_INTERVAL_S
        _next_young[0] = time.monotonic() + YOUNG_INTERVAL_S
    threshold = gc.get_threshold()
    _saved.append(threshold)
    young, middle, old = threshold
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
    try:
        yield
    finally:
        gc.set_threshold(*_saved.pop())
        if not _saved:
            gc.callbacks.remove(_freeze_survivors)
            gc.unfreeze()


def collect_young_when_due(now: float) -> bool:
    """While tuned, every `YOUNG_INTERVAL_S` (monotonic `now`): collect the young generation,
    whose survivors are then frozen; returns whether it did."""
    if not _saved or now < _next_young[0]:
        return False
    gc.collect(0)
    _next_young[0] = now + YOUNG_INTERVAL_S
    return True


def reclaim_frozen_garbage(now: float) -> int | None:
    """While tuned, every `RECLAIM_INTERVAL_S` (monotonic `now`): collect what was frozen and
    freeze the rest again; returns the objects collected (None: not due). One full collection
    (0.7 s of CPU with a million objects), so rare."""
    if not _saved or now < _next_reclaim[0]:
        return None
    started = time.perf_counter()
    gc.unfreeze()
    collected = gc.collect()
    gc.freeze()
    _next_reclaim[0] = time.monotonic() + RECLAIM_INTERVAL_S
    logger.debug(
        "full collection: %d unreachable objects in %.0f ms",
        collected,
        (time.perf_counter() - started) * 1000,
    )
    return collected
