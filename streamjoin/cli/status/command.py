"""`streamjoin status [APP] [--group ID --bootstrap HOST:PORT]`: the worker group at work.

Reads what the workers already tell: the group's metadata through the admin API (DescribeGroups,
never joining the group) and each worker's GET /status at the URL it advertises (workers serve
it on their --metrics-port). Live on a terminal (refreshed every --interval), one snapshot with
--once or on a pipe, JSON with --format json.
"""

from __future__ import annotations

import asyncio
import enum
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from aiokafka.errors import KafkaError
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.cli.kafka_options import quiet_logs, run_kafka
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.cli.status.endpoints import fetch_statuses
from streamjoin.cli.status.render import render
from streamjoin.cli.status.snapshot import decode_members, group_snapshot
from streamjoin.dsl.loading import load_app
from streamjoin.errors import StreamJoinError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.groups import GroupDescription, describe_group, describe_group_with

__all__ = ("register", "take_snapshot")

_PIPE_WIDTH = 150


class Format(enum.StrEnum):
    text = "text"
    json = "json"


async def take_snapshot(
    group: str,
    kafka: KafkaConnection,
    workers: Sequence[str] = (),
    described: GroupDescription | None = None,
) -> dict[str, Any]:
    """The group now: its metadata (`described`: already read), and the /status of every
    worker it advertises (and of `workers`, URLs given on the command line)."""
    described = described or await describe_group(group, kafka)
    members = decode_members(described)
    urls = {m.info.status_url for m in members if m.info is not None and m.info.status_url}
    answers = await fetch_statuses(urls | set(workers))
    return group_snapshot(group, described, members, answers, int(time.time() * 1000))


def status(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[
        str | None,
        typer.Argument(
            metavar="[APP]",
            help="The app, as MODULE:ATTRIBUTE: its app id is the group, its broker the default.",
        ),
    ] = None,
    app_dir: Annotated[
        Path, typer.Option(metavar="DIR", help="Directory to import MODULE from.")
    ] = Path("."),
    group: Annotated[
        str | None,
        typer.Option(metavar="ID", help="The group (the app id) to show, without the app's code."),
    ] = None,
    bootstrap: Annotated[
        str | None,
        typer.Option(
            "--bootstrap",
            "-b",
            metavar="HOST:PORT",
            envvar="STREAMJOIN_BOOTSTRAP",
            help="Kafka bootstrap servers.",
            show_default="the app's broker",
        ),
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Print one snapshot and exit.")] = False,
    output: Annotated[
        Format,
        typer.Option("--format", help="text: the view; json: one snapshot for scripts."),
    ] = Format.text,
    interval: Annotated[
        float, typer.Option(metavar="SECONDS", help="Time between refreshes of the live view.")
    ] = 2.0,
    worker: Annotated[
        list[str] | None,
        typer.Option(
            metavar="URL",
            help="Also ask this worker's endpoint (http://host:metrics-port; repeatable): for "
            "brokers that describe groups without their metadata.",
        ),
    ] = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Show a worker group at work: workers, tasks and their learners, lag, rebalances.

    Reads the group's own metadata through the broker (never joining the group) and each
    worker's live figures from its metrics endpoint (GET /status; workers started with
    --metrics-port serve it). A worker that does not answer is named in one line; its tasks
    still show from the group's assignment.
    """
    quiet_logs()
    kafka = _connection(app, app_dir, group, bootstrap, security)
    group_id = kafka[0]
    if interval <= 0:
        fail(f"--interval {interval}: give a number of seconds above 0")
    workers = worker or []
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=_PIPE_WIDTH)  # a log is not wrapped at 80
    if output is Format.json:
        console.print_json(data=run_kafka(take_snapshot(group_id, kafka[1], workers)))
        return
    if once or not console.is_terminal:
        console.print(render(run_kafka(take_snapshot(group_id, kafka[1], workers))))
        return
    run_kafka(_live(console, group_id, kafka[1], workers, interval))


def _connection(
    app: str | None,
    app_dir: Path,
    group: str | None,
    bootstrap: str | None,
    security: SecurityChoice,
) -> tuple[str, KafkaConnection]:
    if app is None:
        if group is None:
            fail("give the app (MODULE:ATTRIBUTE) or --group ID --bootstrap HOST:PORT")
        if bootstrap is None:
            fail("--group needs --bootstrap HOST:PORT (or the app, whose broker it takes)")
        return group, security.connection(bootstrap)
    try:
        loaded = load_app(app, app_dir)
    except StreamJoinError as exc:
        fail(escape(str(exc)))
    settings = loaded.settings
    return group or loaded.app_id, security.connection(
        bootstrap or settings.broker, settings.security
    )


async def _live(
    console: Console, group: str, kafka: KafkaConnection, workers: list[str], interval: float
) -> None:
    """Refresh until Ctrl-C, through one admin client; a snapshot that fails keeps the last
    one on screen and says why."""
    async with open_admin(kafka) as admin:
        with Live(console=console, auto_refresh=False, screen=False) as live:
            while True:
                try:
                    described = await describe_group_with(admin, group)
                    shown = await take_snapshot(group, kafka, workers, described)
                    live.update(render(shown), refresh=True)
                except (StreamJoinError, KafkaError, OSError) as exc:
                    console.print(f"[red]{escape(str(exc) or type(exc).__name__)}[/]; trying again")
                await asyncio.sleep(interval)


def register(app: typer.Typer) -> None:
    app.command("status")(security_options(status))
