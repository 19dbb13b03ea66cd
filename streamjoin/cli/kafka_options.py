"""What the commands that talk to Kafka share: the --bootstrap option and running a coroutine
with one-line errors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.errors import StreamJoinError

__all__ = ("DEFAULT_BOOTSTRAP", "Bootstrap", "quiet_logs", "run_kafka")

T = TypeVar("T")

Bootstrap = Annotated[
    str,
    typer.Option(
        "--bootstrap",
        "-b",
        metavar="HOST:PORT",
        envvar="STREAMJOIN_BOOTSTRAP",
        help="Kafka bootstrap servers (comma-separated).",
    ),
]
DEFAULT_BOOTSTRAP = "localhost:9092"


def run_kafka(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; a StreamJoinError (unreachable broker, refused input) ends the command with
    its one-line message and exit status 2. Ctrl-C ends it quietly with 130."""
    try:
        return asyncio.run(work)
    except StreamJoinError as exc:
        fail(escape(str(exc)))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def quiet_logs() -> None:
    """Only warnings on stderr: a tool command's output is what it prints, not client logs."""
    logging.getLogger().setLevel(logging.WARNING)
