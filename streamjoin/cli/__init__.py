"""The `streamjoin` command line: one module per command, each with a `register(app)` function."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import NoReturn

import typer
from rich.console import Console

from streamjoin.cli.help_style import ConventionalGroup
from streamjoin.errors import StreamJoinError

__all__ = ("app", "fail", "main")

app = typer.Typer(
    name="streamjoin",
    cls=ConventionalGroup,
    rich_markup_mode=None,
    help="Kafka Streams-style stream joins for Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Kafka Streams-style stream joins for Python."""


_COMMAND_MODULES = (
    "broker",
    "topics",
    "produce",
    "consume",
    "worker.command",
    "plan.command",
    "spark.backfill",
    "spark.audit",
    "spark.archive",
    "spark.stream",
    "describe",
    "query",
    "status.command",
)

_stderr = Console(stderr=True, highlight=False)


def fail(message: str, status: int = 2) -> NoReturn:
    """Print one line saying what is wrong and exit with `status`: for bad input, no traceback."""
    _stderr.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(status)


for _name in _COMMAND_MODULES:
    importlib.import_module(f"streamjoin.cli.{_name}").register(app)


def main() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        app()
    except StreamJoinError as exc:
        _stderr.print(f"[bold red]error:[/] {exc}", soft_wrap=True)
        sys.exit(2)
