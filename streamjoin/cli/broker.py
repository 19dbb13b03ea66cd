"""`streamjoin broker`: run the embedded broker in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import threading
from types import FrameType

import typer
from rich.console import Console

from streamjoin.broker import EmbeddedBroker

__all__ = ("register",)


def broker(
    port: int = typer.Option(
        9092, "--port", "-p", help="Loopback port to listen on (0 = any free port)."
    ),
    startup_timeout: float = typer.Option(15.0, help="Seconds to wait for the broker to answer."),
) -> None:
    """Run an embedded Apache-Kafka-compatible broker (Tansu, data in memory) on 127.0.0.1."""
    console = Console(highlight=False)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    with EmbeddedBroker(port or None, startup_timeout=startup_timeout) as running:
        console.print(f"bootstrap: {running.bootstrap}")
        console.print("[dim]data lives in memory only; Ctrl-C to stop[/]")
        while not stop.wait(0.5):
            if not running.is_running():
                console.print(f"[red]the broker exited unexpectedly:[/]\n{running.log_tail()}")
                raise typer.Exit(1)
    console.print("broker stopped")


def register(app: typer.Typer) -> None:
    app.command()(broker)
