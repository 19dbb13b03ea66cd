"""The worker's Prometheus metrics, read at scrape time from the parts that count them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from streamjoin.assignment.model import TopicPartition
from streamjoin.metrics.registry import MetricsRegistry, Sample
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.tasks.rebalances import RebalanceReason, RebalanceRecorder
from streamjoin.state.events import RestoreCompleted, RestoreProgress, StateEvent

__all__ = (
    "RestoreTracker",
    "log_summary",
    "register_rebalance_metrics",
    "register_worker_metrics",
)

logger = logging.getLogger("streamjoin.runtime.process.worker")


class RestoreTracker:
    """Latest restore figures per task, from the state manager's events."""

    def __init__(self) -> None:
        self.latest: dict[str, RestoreProgress] = {}
        self.completed: dict[str, int] = {}
        """Records the last restore of each task read before it could run (0: warm hand-off)."""

    def __call__(self, event: StateEvent) -> None:
        if isinstance(event, RestoreProgress):
            self.latest[event.task_id] = event
        elif isinstance(event, RestoreCompleted):
            self.completed[event.task_id] = event.restored


def register_worker_metrics(
    registry: MetricsRegistry,
    manager: TaskManager,
    sink: ProducerSink,
    restores: RestoreTracker,
    lag: Callable[[], Iterable[tuple[TopicPartition, int]]],
) -> None:
    def by_topic(counts: dict[str, int]) -> list[Sample]:
        return [((("topic", topic),), float(n)) for topic, n in sorted(counts.items())]

    def per_join(field: str) -> Callable[[], list[Sample]]:
        def collect() -> list[Sample]:
            return [
                ((("join", join),), float(getattr(counters, field)))
                for join, (counters, _) in sorted(manager.counters().items())
            ]

        return collect

    registry.register(
        "records_in_total",
        "counter",
        "Input records fetched, by topic",
        lambda: by_topic(manager.records_in),
    )
    registry.register(
        "records_out_total",
        "counter",
        "Records produced (outputs and dead letters), by topic",
        lambda: by_topic(sink.sent),
    )
    registry.register(
        "records_rekeyed_total",
        "counter",
        "Records a key_by wrote to its repartition topic, by sub-topology",
        lambda: [
            ((("subtopology", name),), float(n)) for name, n in sorted(manager.rekeyed().items())
        ],
    )
    registry.register(
        "active_tasks",
        "gauge",
        "Active tasks on this worker, by sub-topology (a join, or a key_by's repartition)",
        lambda: [
            ((("subtopology", name),), float(n))
            for name, n in sorted(manager.tasks_per_subtopology().items())
        ],
    )
    registry.register("join_matches_total", "counter", "Joined pairs emitted", per_join("matched"))
    registry.register(
        "join_unmatched_total", "counter", "Left/outer non-matches emitted", per_join("unmatched")
    )
    registry.register(
        "join_late_joined_total",
        "counter",
        "Late stream-stream records (behind their window plus grace) that joined partners the "
        "other side's store still held",
        per_join("late_joined"),
    )
    registry.register(
        "join_late_no_partner_total",
        "counter",
        "Late stream-stream records that found no partner (a left/outer side emits them as "
        "non-matches)",
        per_join("late_no_partner"),
    )
    registry.register(
        "upstream_wait_seconds_total",
        "counter",
        "Seconds joins waited for records on their way through a repartition topic, over tasks",
        lambda: [((), manager.scheduler.held_s)],
    )
    registry.register(
        "join_no_match_dropped_total",
        "counter",
        "Stream records an inner global-table join dropped: no table value for their key",
        per_join("no_match_dropped"),
    )
    registry.register(
        "join_retracted_total",
        "counter",
        "Tombstones a table-table or foreign-key join emitted",
        per_join("retracted"),
    )
    registry.register(
        "join_too_old_total",
        "counter",
        "Stream records older than the history of the versioned table they join (they join "
        "only the key's latest version)",
        per_join("too_old"),
    )
    registry.register(
        "join_too_old_updates_total",
        "counter",
        "Versioned table updates dropped: older than the table's history",
        per_join("too_old_updates"),
    )
    registry.register(
        "join_stale_total",
        "counter",
        "Foreign-key join responses discarded: the left value changed since",
        per_join("stale"),
    )
    registry.register(
        "dead_letters_total",
        "counter",
        "Bad records sent to the dead-letter topic",
        lambda: [
            ((("join", join),), float(dead))
            for join, (_, dead) in sorted(manager.counters().items())
        ],
    )
    registry.register(
        "consumer_lag",
        "gauge",
        "Records behind the high watermark, by input partition",
        lambda: [
            ((("topic", tp.topic), ("partition", str(tp.partition))), float(n))
            for tp, n in sorted(lag())
        ],
    )
    registry.register(
        "restore_remaining",
        "gauge",
        "Changelog records still to restore, by task",
        lambda: [
            ((("task", task), ("standby", str(p.standby).lower())), float(p.remaining))
            for task, p in sorted(restores.latest.items())
            if p.remaining is not None
        ],
    )
    registry.register(
        "restored_total",
        "counter",
        "Changelog records restored, by task",
        lambda: [
            ((("task", task), ("standby", str(p.standby).lower())), float(p.restored))
            for task, p in sorted(restores.latest.items())
        ],
    )
    registry.register(
        "restored_before_running",
        "gauge",
        "Changelog records a task restored before it could run (0 after a warm hand-off)",
        lambda: [((("task", task),), float(n)) for task, n in sorted(restores.completed.items())],
    )
    registry.register(
        "rebalances_total",
        "counter",
        "Assignments received from the group",
        lambda: [((), float(manager.rebalances))],
    )
    registry.register(
        "tasks",
        "gauge",
        "Active tasks on this worker, by state",
        lambda: [
            ((("state", "running"),), float(sum(1 for a in manager.active.values() if a.running))),
            (
                (("state", "restoring"),),
                float(sum(1 for a in manager.active.values() if not a.running)),
            ),
        ],
    )


def register_rebalance_metrics(registry: MetricsRegistry, recorder: RebalanceRecorder) -> None:
    """Why rebalances happened, and how long the output of the tasks moved here paused."""
    registry.register(
        "rebalances_by_reason_total",
        "counter",
        "Rebalances this worker took part in, by what it knows of their cause (one rebalance "
        "may count under several reasons; group: started by another member)",
        lambda: [((("reason", r.value),), float(recorder.reasons[r])) for r in RebalanceReason],
    )
    registry.register(
        "handoffs_total",
        "counter",
        "Tasks that became active on this worker and processed their first record here",
        lambda: [((), float(recorder.handoffs))],
    )
    registry.register(
        "handoff_pause_seconds_total",
        "counter",
        "Seconds the output of those tasks paused, summed: from their old owner's stop to "
        "their first record here (mean pause: rate of this over rate of handoffs_total)",
        lambda: [((), recorder.handoff_pause_s)],
    )


def log_summary(manager: TaskManager, sink: ProducerSink) -> None:
    """What the worker did, logged as it stops: per join, then records in and out."""
    for join, (counters, dead) in sorted(manager.counters().items()):
        logger.info(
            "join %s: %d matched, %d unmatched, %d late records (%d joined, %d with no "
            "partner), %d skipped, %d dead letters",
            join,
            counters.matched,
            counters.unmatched,
            counters.late,
            counters.late_joined,
            counters.late_no_partner,
            counters.skipped,
            dead,
        )
    logger.info(
        "records in %s; out %s; %d assignments",
        dict(manager.records_in),
        dict(sink.sent),
        manager.rebalances,
    )
