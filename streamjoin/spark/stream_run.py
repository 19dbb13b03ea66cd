"""Following a running streaming query: one progress summary per micro-batch, with the late
records Spark dropped in it and so far (behind its watermark: where the workers would still join
them with what their stores keep, Spark drops them, and says so here), and a stop on request
that lets the current micro-batch finish first (so the checkpoint ends on a committed batch, and
a restart has nothing to redo)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.streaming.query import StreamingQuery

__all__ = ("FINISH_BATCH_S", "BatchProgress", "batch_progress", "follow")

_POLL_S = 1
FINISH_BATCH_S = 120.0
"""How long a stop waits for the current micro-batch to end before interrupting it (safe too:
the batch is redone from the checkpoint on restart)."""


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """One micro-batch, from Spark's progress report."""

    batch_id: int
    input_rows: int
    input_rows_per_s: float
    processed_rows_per_s: float
    watermark: str | None
    state_rows: int
    late_rows: int
    """Input rows the join dropped for being behind the watermark (late records, which the
    workers would still join with what their stores keep)."""
    late_total: int = 0
    """Late rows dropped by this run so far, this micro-batch's included."""


def batch_progress(report: Mapping[str, Any]) -> BatchProgress:
    """A BatchProgress from `StreamingQuery.recentProgress` JSON."""
    operators = report.get("stateOperators") or []
    return BatchProgress(
        batch_id=int(report["batchId"]),
        input_rows=int(report.get("numInputRows") or 0),
        input_rows_per_s=float(report.get("inputRowsPerSecond") or 0.0),
        processed_rows_per_s=float(report.get("processedRowsPerSecond") or 0.0),
        watermark=(report.get("eventTime") or {}).get("watermark"),
        state_rows=sum(int(op.get("numRowsTotal") or 0) for op in operators),
        late_rows=sum(int(op.get("numRowsDroppedByWatermark") or 0) for op in operators),
    )


def _last_batch(query: StreamingQuery) -> int:
    return max((int(p["batchId"]) for p in query.recentProgress), default=-1)


def _wait_for_batch_end(query: StreamingQuery) -> None:
    """Until the micro-batch running now has committed (or none runs). The next one may have
    started by then: stopping interrupts it before it commits, and a restart redoes it."""
    done = _last_batch(query)
    deadline = time.monotonic() + FINISH_BATCH_S
    while query.isActive and time.monotonic() < deadline:
        if not query.status.get("isTriggerActive") or _last_batch(query) > done:
            return
        time.sleep(0.1)


def follow(
    query: StreamingQuery, stop: threading.Event, report: Callable[[BatchProgress], None]
) -> int:
    """Report each micro-batch of `query` until it ends by itself, or until `stop` is set, then
    stop it once its current micro-batch is done; the late rows dropped in all. A query that
    failed raises its error."""
    last = -1
    late = 0

    def report_new() -> None:
        nonlocal last, late
        for raw in query.recentProgress:
            progress = batch_progress(raw)
            if progress.batch_id > last:
                last = progress.batch_id
                late += progress.late_rows
                report(replace(progress, late_total=late))

    while not query.awaitTermination(_POLL_S):
        report_new()
        if stop.is_set():
            _wait_for_batch_end(query)
            query.stop()
            break
    report_new()
    failure = query.exception()
    if failure is not None:
        raise failure
    return late
