"""`WorkerOptions`: what the `streamjoin worker` command line overrides in an app's settings,
and the one place that applies (and checks) them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streamjoin.dsl.settings import AppSettings, check_guarantee
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.security import KafkaSecurity

__all__ = ("WorkerOptions", "apply_options")


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """What `streamjoin worker` options override in the app's own settings."""

    bootstrap: str | None = None
    """Kafka bootstrap servers (default: the app's `broker`)."""
    security: KafkaSecurity | None = None
    """TLS and SASL settings (default: the app's `security`)."""
    state_dir: Path | None = None
    """Where task state lives (default: the app's `state_dir`)."""
    memory_budget_bytes: int | None = None
    """Memory of all state stores together (default: the app's `memory_budget_bytes`)."""
    commit_interval_s: float | None = None
    """Seconds between commits (default: the app's `commit_interval_s`)."""
    metrics_port: int | None = None
    """Serve Prometheus metrics and GET /status on this port (None: no endpoint)."""
    metrics_host: str = "127.0.0.1"
    """Address the Prometheus endpoint listens on (loopback by default)."""
    advertised_metrics_url: str | None = None
    """Where `streamjoin status` reaches this worker's endpoint (/metrics, /status), told to
    the group (default: http://<metrics host>:<metrics port>; a supervised process: its
    supervisor's endpoint)."""
    on_error: str | None = None
    """dlq or fail (default: the app's `on_error`)."""
    max_future_ms: int | None = None
    """Bad-record bound on future timestamps (default: the app's `max_future_ms`)."""
    broker_unavailable_timeout_s: float | None = None
    """Seconds to keep reconnecting to a silent broker before exiting (default: the app's)."""
    processing_guarantee: str | None = None
    """at_least_once or exactly_once (default: the app's `processing_guarantee`)."""
    session_timeout_ms: int = 10_000
    """Time without a heartbeat after which the group drops this worker."""
    heartbeat_interval_ms: int = 1_000
    """Time between heartbeats to the group coordinator."""
    group_instance_id: str | None = None
    """Static membership id (group.instance.id): a restart within the session timeout keeps
    the worker's tasks without a rebalance."""
    member_index: int | None = None
    """Which of the host's `--processes` this worker is (None: the only one)."""
    capacity: int = 1
    """Tasks this worker takes relative to others (the task assignor's capacity)."""
    num_standby_replicas: int | None = None
    """Hot standbys per task (default: the app's `num_standby_replicas`)."""
    acceptable_recovery_lag: int | None = None
    """Records behind at which a copy counts as caught up (default: the app's)."""
    drain_timeout_s: float = 20.0
    """`stop(warm=True)` (SIGTERM) hands the active tasks off warm for this long at most before
    the worker leaves; 0: it leaves at once."""
    followup_on_catch_up: bool = True
    """Request the follow-up rebalance as soon as every learner here has caught up; False
    leaves it to the probing interval (Kafka Streams' behaviour, for comparison)."""


def apply_options(settings: AppSettings, options: WorkerOptions) -> AppSettings:
    """`settings` with the options that override them applied; a wrong one is refused in one
    line (ConfigurationError)."""
    if options.processing_guarantee is not None:
        check_guarantee(options.processing_guarantee)
        settings.processing_guarantee = options.processing_guarantee  # type: ignore[assignment]
    if options.on_error is not None:
        if options.on_error not in ("dlq", "fail"):
            raise ConfigurationError(f"--on-error {options.on_error!r}: use dlq or fail")
        settings.on_error = options.on_error  # type: ignore[assignment]
    if options.max_future_ms is not None:
        if options.max_future_ms < 0:
            raise ConfigurationError(
                f"--max-future-ms {options.max_future_ms}: use 0 or more milliseconds"
            )
        settings.max_future_ms = options.max_future_ms
    if options.broker_unavailable_timeout_s is not None:
        settings.broker_unavailable_timeout_s = options.broker_unavailable_timeout_s
    if options.num_standby_replicas is not None:
        settings.num_standby_replicas = options.num_standby_replicas
    if options.acceptable_recovery_lag is not None:
        settings.acceptable_recovery_lag = options.acceptable_recovery_lag
    return settings
