"""What a worker serves besides its tasks: the Prometheus endpoint with the worker's metrics,
and interactive queries on its stores."""

from __future__ import annotations

from collections.abc import Callable

from streamjoin.assignment.model import TopicPartition
from streamjoin.errors import ConfigurationError
from streamjoin.metrics import MetricsRegistry, MetricsServer
from streamjoin.query.server import QueryServer
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.process.loop_monitor import LoopMonitor
from streamjoin.runtime.process.memory import register_memory_metrics
from streamjoin.runtime.process.metrics import (
    RestoreTracker,
    register_query_metrics,
    register_worker_metrics,
)
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.topology.app_topology import AppTopology
from streamjoin.state.manager import StateManager

__all__ = ("check_query_options", "register_metrics", "serve_metrics", "serve_queries")


def check_query_options(query_port: int | None, advertised_query_url: str | None) -> None:
    advertised = advertised_query_url
    if advertised is not None:
        if query_port is None:
            raise ConfigurationError("--advertised-query-url needs --query-port (no queries)")
        if not advertised.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"--advertised-query-url {advertised!r}: give a URL, http://host:port"
            )


def register_metrics(
    metrics: MetricsRegistry,
    manager: TaskManager,
    sink: ProducerSink,
    restores: RestoreTracker,
    state: StateManager,
    *,
    lag: Callable[[], list[tuple[TopicPartition, int]]],
    loop_monitor: LoopMonitor,
) -> None:
    register_worker_metrics(metrics, manager, sink, restores, lag)
    register_memory_metrics(metrics, state, manager.buffered_bytes)
    metrics.register(
        "event_loop_stalls_total",
        "counter",
        "Times the event loop ran over 1 s late",
        lambda: [((), float(loop_monitor.stalls))],
    )


async def serve_metrics(
    metrics: MetricsRegistry, port: int | None, host: str
) -> MetricsServer | None:
    """The Prometheus endpoint, when asked for."""
    if port is None:
        return None
    server = MetricsServer(metrics, port, host)
    await server.start()
    return server


async def serve_queries(
    metrics: MetricsRegistry,
    topology: AppTopology,
    state: StateManager,
    roles: WorkerRoles,
    *,
    port: int | None,
    host: str,
    advertised: str | None,
    global_tables: GlobalTables | None,
) -> QueryServer | None:
    """Answer queries, and advertise where in the subscription (before joining the group)."""
    if port is None:
        return None
    queries = QueryServer(
        topology,
        state,
        lambda: roles.assignor.latest,
        host=host,
        port=port,
        advertised=advertised,
        global_tables=global_tables,
    )
    roles.query_url = await queries.start()
    register_query_metrics(metrics, queries.stats)
    return queries
