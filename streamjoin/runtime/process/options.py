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
    security: KafkaSecurity | None = None
    """TLS and SASL settings (default: the app's `security`)."""
    state_dir: Path | None = None
    memory_budget_bytes: int | None = None
    """Memory of all state stores together (default: the app's `memory_budget_bytes`)."""
    commit_interval_s: float | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    """Address the Prometheus endpoint listens on (loopback by default)."""
    advertised_metrics_url: str | None = None
    """Where `streamjoin status` reaches this worker's endpoint (/metrics, /status), told to
    the group (default: http://<metrics host>:<metrics port>; a supervised process: its
    supervisor's endpoint)."""
    on_error: str | None = None
    max_future_ms: int | None = None
    broker_unavailable_timeout_s: float | None = None
    processing_guarantee: str | None = None
    """at_least_once or exactly_once (default: the app's `processing_guarantee`)."""
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 1_000
    group_instance_id: str | None = None
    member_index: int | None = None
    """Which of the host's `--processes` this worker is (None: the only one)."""
    capacity: int = 1
    """Tasks this worker takes relative to others (the task assignor's capacity)."""
    num_standby_replicas: int | None = None
    acceptable_recovery_lag: int | None = None
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
