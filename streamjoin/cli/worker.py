"""`streamjoin worker MODULE:ATTR`: run an app's joins as one member of its worker group."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Annotated

import typer

from streamjoin.dsl.loading import load_app
from streamjoin.runtime.worker import Worker, WorkerOptions
from streamjoin.state.memory import parse_size

__all__ = ("register",)


def worker(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[str, typer.Argument(help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")],
    app_dir: Annotated[Path, typer.Option(help="Directory to import MODULE from.")] = Path("."),
    bootstrap: Annotated[
        str | None, typer.Option(help="Kafka bootstrap servers (default: the app's broker).")
    ] = None,
    state_dir: Annotated[
        Path | None, typer.Option(help="Where task state lives (default: the app's).")
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            help="Memory of all state stores together: RocksDB block cache and write buffers, "
            "newest window records (e.g. 256MiB, 1GiB; default: the app's, 256MiB)."
        ),
    ] = None,
    processing_guarantee: Annotated[
        str, typer.Option(help="at_least_once (the only one so far).")
    ] = "at_least_once",
    commit_interval: Annotated[
        float | None, typer.Option(help="Seconds between commits (default: the app's).")
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port.")
    ] = None,
    on_error: Annotated[
        str | None, typer.Option(help="Bad records: dlq (dead-letter topic) or fail.")
    ] = None,
    session_timeout: Annotated[
        float, typer.Option(help="Seconds without heartbeat before the group drops the worker.")
    ] = 10.0,
    capacity: Annotated[int, typer.Option(help="Share of tasks relative to other workers.")] = 1,
    standby_replicas: Annotated[
        int | None, typer.Option(help="Hot standbys per task (default: the app's, 0).")
    ] = None,
    acceptable_recovery_lag: Annotated[
        int | None,
        typer.Option(help="Changelog records behind at which a worker counts as caught up."),
    ] = None,
    instance_id: Annotated[
        str | None, typer.Option(help="Static group membership id (group.instance.id).")
    ] = None,
) -> None:
    """Run the joins of an app. Ctrl-C or SIGTERM: finish the batch, commit, leave the group;
    a second signal exits at once."""
    options = WorkerOptions(
        bootstrap=bootstrap,
        state_dir=state_dir,
        memory_budget_bytes=None if memory is None else parse_size(memory),
        commit_interval_s=commit_interval,
        metrics_port=metrics_port,
        on_error=on_error,
        processing_guarantee=processing_guarantee,
        group_instance_id=instance_id,
        capacity=capacity,
        num_standby_replicas=standby_replicas,
        acceptable_recovery_lag=acceptable_recovery_lag,
        session_timeout_ms=int(session_timeout * 1000),
        heartbeat_interval_ms=max(100, int(session_timeout * 1000) // 6),
    )
    running = Worker(load_app(app, app_dir), options)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            if signals > 1:
                os._exit(130)
            running.stop()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal)
        await running.run()

    asyncio.run(main())


def register(app: typer.Typer) -> None:
    app.command()(worker)
