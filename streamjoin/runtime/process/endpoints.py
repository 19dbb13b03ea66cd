"""What a worker serves besides its tasks: the Prometheus endpoint with the worker's metrics,
and the services plugged in from above (`WorkerService`: interactive queries, query/endpoint.py).

The runtime defines the interface and never imports what implements it; the command line
creates the services and hands them to `Worker(app, options, services=...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from streamjoin.assignment.model import TopicPartition
from streamjoin.metrics import MetricsRegistry, MetricsServer
from streamjoin.metrics.server import StatusSource
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.process.loop_monitor import LoopMonitor
from streamjoin.runtime.process.memory import register_memory_metrics
from streamjoin.runtime.process.metrics import (
    RestoreTracker,
    register_rebalance_metrics,
    register_worker_metrics,
)
from streamjoin.runtime.process.options import WorkerOptions
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.tasks.rebalances import RebalanceRecorder
from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.topology.app_topology import AppTopology
from streamjoin.state.manager import StateManager

__all__ = ("WorkerContext", "WorkerService", "register_metrics", "serve_metrics")


@dataclass(frozen=True, slots=True)
class WorkerContext:
    """What a service reads of the worker it runs beside, once the worker's state exists."""

    topology: AppTopology
    state: StateManager
    roles: WorkerRoles
    """The tasks' placement as the assignor told it, and what this worker advertises in its
    subscription (`query_url`)."""
    metrics: MetricsRegistry
    """The worker's registry: a service registers its own metrics here."""
    global_tables: GlobalTables | None


class WorkerService(Protocol):
    """Something served beside the worker's tasks."""

    async def start(self, worker: WorkerContext) -> None:
        """Called each time the worker starts (again, after an exactly-once failure), once its
        state and roles exist and before it joins its group, so what it advertises is in the
        first subscription."""
        ...

    async def stop(self) -> None:
        """Called as the worker stops, before the stores it may read close."""
        ...


def register_metrics(
    metrics: MetricsRegistry,
    manager: TaskManager,
    sink: ProducerSink,
    restores: RestoreTracker,
    state: StateManager,
    *,
    lag: Callable[[], list[tuple[TopicPartition, int]]],
    loop_monitor: LoopMonitor,
    rebalances: RebalanceRecorder,
) -> None:
    register_worker_metrics(metrics, manager, sink, restores, lag)
    register_rebalance_metrics(metrics, rebalances)
    register_memory_metrics(metrics, state, manager.buffered_bytes)
    metrics.register(
        "event_loop_stalls_total",
        "counter",
        "Times the event loop ran over 1 s late",
        lambda: [((), float(loop_monitor.stalls))],
    )


async def serve_metrics(
    metrics: MetricsRegistry, options: WorkerOptions, status: StatusSource, roles: WorkerRoles
) -> MetricsServer | None:
    """The Prometheus endpoint with the worker's live status, when asked for; `roles` advertise
    where the status is (or where `--advertised-metrics-url` says: a supervisor's endpoint)."""
    roles.status_url = options.advertised_metrics_url
    if options.metrics_port is None:
        return None
    server = MetricsServer(metrics, options.metrics_port, options.metrics_host, status)
    await server.start()
    roles.status_url = roles.status_url or server.url
    return server
