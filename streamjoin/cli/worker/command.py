"""`streamjoin worker MODULE:ATTR`: run an app's joins as one member of its worker group."""

from __future__ import annotations

import asyncio
import enum
import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.cli.kafka_options import run_kafka
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.cli.worker.checks import (
    check_advertised_metrics_url,
    check_port,
    check_state_dir,
    create_missing_inputs,
)
from streamjoin.cli.worker.processes import parse_processes, run_supervised_workers
from streamjoin.dsl.app import App
from streamjoin.dsl.loading import load_app
from streamjoin.dsl.settings import AppSettings
from streamjoin.errors import StreamJoinError
from streamjoin.memory_settings import parse_size
from streamjoin.query.endpoint import query_services
from streamjoin.runtime.process.supervised import SupervisedChild
from streamjoin.runtime.process.worker import Worker, WorkerOptions

__all__ = ("register",)


class OnError(enum.StrEnum):
    dlq = "dlq"
    fail = "fail"


class OffsetResetChoice(enum.StrEnum):
    earliest = "earliest"
    latest = "latest"
    none = "none"


def _app_default(setting: str, unit: str = "") -> str:
    """The help's default for an option that overrides one of the app's settings."""
    return f"app setting, {getattr(AppSettings(), setting)}{unit}"


def _override(app: App, **values: float | None) -> None:
    """Apply the options given to the app's settings; a negative number is refused."""
    for setting, value in values.items():
        if value is None:
            continue
        if value < 0:
            fail(f"--{setting.removesuffix('_s').replace('_', '-')} {value}: cannot be negative")
        setattr(app.settings, setting, value)


def worker(  # noqa: PLR0917 - one parameter per command-line option
    context: typer.Context,
    app: Annotated[
        str,
        typer.Argument(metavar="APP", help="The app, as MODULE:ATTRIBUTE (e.g. app:joins)."),
    ],
    app_dir: Annotated[
        Path, typer.Option(metavar="DIR", help="Directory to import MODULE from.")
    ] = Path("."),
    bootstrap: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Kafka bootstrap servers.",
            show_default=_app_default("broker"),
        ),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Where task state lives.", show_default=_app_default("state_dir")
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            help="Memory of all state stores together: RocksDB block cache and write buffers, "
            "newest window records, records waiting in the input buffers (e.g. 256MiB, 1GiB; "
            "default: the app's, 256MiB)."
        ),
    ] = None,
    processing_guarantee: Annotated[
        str | None,
        typer.Option(
            metavar="[at_least_once|exactly_once]",
            help="at_least_once: outputs may repeat after a crash, never go missing. "
            "exactly_once: each commit is a Kafka transaction; read the outputs with "
            "isolation.level=read_committed (docs/guarantees.md).",
            show_default=_app_default("processing_guarantee"),
        ),
    ] = None,
    commit_interval: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Time between commits (commit_interval_s).",
            show_default=_app_default("commit_interval_s", " s"),
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            metavar="PORT", help="Serve Prometheus metrics on this port.", show_default="no metrics"
        ),
    ] = None,
    query_port: Annotated[
        int | None,
        typer.Option(
            metavar="PORT",
            help="Answer interactive queries over HTTP on this port (GET /stores, "
            "/stores/<store>/keys/<key>), for any key of the app.",
            show_default="no queries",
        ),
    ] = None,
    query_host: Annotated[
        str,
        typer.Option(metavar="HOST", help="The address the query server binds."),
    ] = "127.0.0.1",
    advertised_query_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="The URL other workers and clients reach this worker's queries at.",
            show_default="http://<query host>:<query port>",
        ),
    ] = None,
    on_error: Annotated[
        OnError | None,
        typer.Option(
            help="A bad record goes to the dead-letter topic <app_id>-dlq, or stops the worker.",
            show_default=_app_default("on_error"),
        ),
    ] = None,
    max_future_ms: Annotated[
        int | None,
        typer.Option(
            metavar="MS",
            help="A record stamped further ahead of the wall clock than this is a bad record: it "
            "never moves stream time (max_future_ms).",
            show_default=_app_default("max_future_ms", " ms"),
        ),
    ] = None,
    broker_unavailable_timeout: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Time to keep reconnecting to a broker that does not answer before exiting "
            "(broker_unavailable_timeout_s).",
            show_default=_app_default("broker_unavailable_timeout_s", " s"),
        ),
    ] = None,
    session_timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", help="Time without heartbeat before the group drops the worker."
        ),
    ] = 10.0,
    drain_timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help="On SIGTERM (or Ctrl-C), keep running the tasks while other workers warm them "
            "up, hand them off, then leave; this long at most (0: leave at once). Keep it some "
            "seconds below the grace period of what stops the worker (Kubernetes: 30 s).",
        ),
    ] = 20.0,
    capacity: Annotated[int, typer.Option(help="Share of tasks relative to other workers.")] = 1,
    standby_replicas: Annotated[
        int | None,
        typer.Option(
            help="Hot standbys per task (num_standby_replicas).",
            show_default=_app_default("num_standby_replicas"),
        ),
    ] = None,
    acceptable_recovery_lag: Annotated[
        int | None,
        typer.Option(
            metavar="RECORDS",
            help="Changelog records behind at which a learner counts as caught up "
            "(acceptable_recovery_lag).",
            show_default=_app_default("acceptable_recovery_lag"),
        ),
    ] = None,
    max_warmup_replicas: Annotated[
        int | None,
        typer.Option(
            help="Learners restoring state at once, group-wide (max_warmup_replicas).",
            show_default=_app_default("max_warmup_replicas"),
        ),
    ] = None,
    probing_rebalance_interval: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Fallback rebalance that promotes learners which caught up "
            "(probing_rebalance_interval_s).",
            show_default=_app_default("probing_rebalance_interval_s", " s"),
        ),
    ] = None,
    max_task_idle_ms: Annotated[
        int | None,
        typer.Option(
            metavar="MS",
            help="How long a task waits for an empty input before going on without it "
            "(max_task_idle_ms).",
            show_default=_app_default("max_task_idle_ms"),
        ),
    ] = None,
    auto_offset_reset: Annotated[
        OffsetResetChoice | None,
        typer.Option(
            help="Where an input resumes without a committed offset, or when its committed "
            "offset is no longer in the log (deleted by retention); none: stop instead.",
            show_default=_app_default("auto_offset_reset"),
        ),
    ] = None,
    instance_id: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Static group membership id (group.instance.id)."),
    ] = None,
    processes: Annotated[
        str,
        typer.Option(
            metavar="N|auto",
            help="Worker processes on this host, one client of the group sharing --state-dir "
            "(auto: one per usable core).",
        ),
    ] = "1",
    create_topics: Annotated[
        bool,
        typer.Option(
            "--create-topics",
            help="Create missing input topics with the partition counts the app declares "
            "(Kafka Streams never creates inputs; neither does the worker without this).",
        ),
    ] = False,
    metrics_host: Annotated[
        str,
        typer.Option(
            metavar="HOST",
            help="Address the Prometheus endpoint listens on (0.0.0.0: every interface); it "
            "also serves GET /status, which `streamjoin status` reads.",
        ),
    ] = "127.0.0.1",
    advertised_metrics_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="The URL `streamjoin status` reaches this worker's metrics endpoint at.",
            show_default="http://<metrics host>:<metrics port>",
        ),
    ] = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Run an app's joins as one member of its worker group.

    Ctrl-C or SIGTERM: hand the tasks off warm (--drain-timeout), finish the batch, commit,
    leave the group (with --processes: every process); a second signal leaves without waiting
    for the hand-off, a third exits at once. A default "(app setting, X)" is the app's own
    (streamjoin.App(..., setting=X)), which the option overrides; window_memory_bytes is set
    in the app only.
    """
    count = parse_processes(processes)
    if drain_timeout < 0:
        fail(f"--drain-timeout {drain_timeout}: cannot be negative (0: leave at once)")
    if count > 1 and (query_port or advertised_query_url):
        fail(
            f"--processes {count} with --query-port {query_port}: the processes of a host cannot "
            "share one query port or URL; give --query-port 0 (each process takes a free port "
            "and advertises it)"
        )
    options = WorkerOptions(
        bootstrap=bootstrap,
        state_dir=state_dir,
        memory_budget_bytes=None if memory is None else parse_size(memory),
        commit_interval_s=commit_interval,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        advertised_metrics_url=advertised_metrics_url,
        on_error=None if on_error is None else on_error.value,
        max_future_ms=max_future_ms,
        broker_unavailable_timeout_s=broker_unavailable_timeout,
        processing_guarantee=processing_guarantee,
        group_instance_id=instance_id,
        capacity=capacity,
        num_standby_replicas=standby_replicas,
        acceptable_recovery_lag=acceptable_recovery_lag,
        session_timeout_ms=int(session_timeout * 1000),
        drain_timeout_s=drain_timeout,
        heartbeat_interval_ms=max(100, int(session_timeout * 1000) // 6),
    )
    try:
        loaded = load_app(app, app_dir)
        _override(
            loaded,
            max_warmup_replicas=max_warmup_replicas,
            probing_rebalance_interval_s=probing_rebalance_interval,
            max_task_idle_ms=max_task_idle_ms,
        )
        if auto_offset_reset is not None:
            loaded.settings.auto_offset_reset = auto_offset_reset.value
        supervised = SupervisedChild.from_environ()
        options = replace(
            options,
            security=security.resolve(loaded.settings.security),
            member_index=None if supervised is None else supervised.index,
        )
        queries = query_services(query_port, query_host, advertised_query_url)
        running = Worker(loaded, options, services=queries)
        # Local settings first: failing on them later would leave Kafka clients half set up.
        check_state_dir(running.state_dir, loaded.app_id)
        if metrics_port is not None:
            check_port("--metrics-port", metrics_port, metrics_host)
        check_advertised_metrics_url(advertised_metrics_url, metrics_port, supervised is not None)
        if query_port is not None:
            check_port("--query-port", query_port, query_host)
    except StreamJoinError as exc:
        fail(escape(str(exc)))
    if create_topics:
        run_kafka(create_missing_inputs(loaded, running.kafka))
    if count > 1:
        raise typer.Exit(
            run_supervised_workers(
                context,
                count,
                state_dir=running.state_dir,
                app_id=loaded.app_id,
                metrics_port=metrics_port,
                metrics_host=metrics_host,
                advertised_metrics_url=advertised_metrics_url,
                instance_id=instance_id,
            )
        )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            if signals > 2:
                os._exit(130)
            running.stop(warm=signals == 1)

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal)
        await (running.run() if supervised is None else supervised.run(running))

    asyncio.run(main())


def register(app: typer.Typer) -> None:
    app.command()(security_options(worker))
