"""Interactive queries plugged into a worker: a `WorkerService` (runtime/process/endpoints.py)
that the command line creates for `--query-port` and the worker starts once its state exists.
It serves the worker's stores (server.py), advertises its URL in the worker's subscription and
counts its lookups in the worker's metrics."""

from __future__ import annotations

from streamjoin.errors import ConfigurationError
from streamjoin.metrics.registry import MetricsRegistry, Sample
from streamjoin.query.server import QueryServer
from streamjoin.query.service import QueryStats
from streamjoin.runtime.process.endpoints import WorkerContext

__all__ = ("QueryEndpoint", "check_query_options", "query_services", "register_query_metrics")


def check_query_options(query_port: int | None, advertised_query_url: str | None) -> None:
    advertised = advertised_query_url
    if advertised is not None:
        if query_port is None:
            raise ConfigurationError("--advertised-query-url needs --query-port (no queries)")
        if not advertised.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"--advertised-query-url {advertised!r}: give a URL, http://host:port"
            )


def query_services(port: int | None, host: str, advertised: str | None) -> list[QueryEndpoint]:
    """The worker's services for `--query-port` (none without it), its options checked."""
    check_query_options(port, advertised)
    return [] if port is None else [QueryEndpoint(port, host, advertised)]


class QueryEndpoint:
    """Queries on `port` (0: any free port) of `host`, advertised as `advertised` (default: the
    URL the server is bound to)."""

    def __init__(self, port: int, host: str = "127.0.0.1", advertised: str | None = None) -> None:
        check_query_options(port, advertised)
        self.port, self.host, self.advertised = port, host, advertised
        self.server: QueryServer | None = None
        """The server of the worker's latest start (a new one after an exactly-once restart)."""

    async def start(self, worker: WorkerContext) -> None:
        roles = worker.roles
        self.server = QueryServer(
            worker.topology,
            worker.state,
            lambda: roles.assignor.latest,
            host=self.host,
            port=self.port,
            advertised=self.advertised,
            global_tables=worker.global_tables,
        )
        roles.query_url = await self.server.start()
        register_query_metrics(worker.metrics, self.server.stats)

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()


def register_query_metrics(registry: MetricsRegistry, stats: QueryStats) -> None:
    """Interactive queries: answered here, answered by another member, failed; and latency."""
    registry.register(
        "queries_total",
        "counter",
        "Key lookups by outcome: served from this worker, forwarded to another, failed",
        lambda: [
            ((("outcome", "served"),), float(stats.served)),
            ((("outcome", "forwarded"),), float(stats.forwarded)),
            ((("outcome", "failed"),), float(stats.failed)),
        ],
    )

    def quantiles() -> list[Sample]:
        recent = sorted(stats.latencies_s)
        if not recent:
            return []
        return [
            ((("quantile", str(q)),), recent[min(len(recent) - 1, int(q * len(recent)))])
            for q in (0.5, 0.9, 0.99)
        ]

    registry.register(
        "query_latency_seconds",
        "gauge",  # quantiles as labels: prometheus_client's summaries carry none of their own
        "Key lookup latency over the latest few thousand lookups",
        quantiles,
    )
