"""`streamjoin broker [--kafka]`: run a local broker in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.console import Console

from streamjoin.broker import Broker, EmbeddedBroker, KafkaBroker
from streamjoin.broker.kafka_jars import fetch_kafka_jars, kafka_jars_dir, kafka_version
from streamjoin.cli import fail

__all__ = ("register",)


def _kafka(port: int | None, data: Path | None, partitions: int, timeout: float) -> Broker:
    """Apache Kafka, its jars fetched by Maven on first use."""
    console = Console(stderr=True, highlight=False)
    if not (kafka_jars_dir() / ".complete").is_file():
        console.print(f"fetching Apache Kafka {kafka_version()}'s jars with Maven (once)...")
        fetch_kafka_jars()
    return KafkaBroker(port, data_dir=data, partitions=partitions, startup_timeout=timeout)


def broker(
    port: int = typer.Option(
        9092, "--port", "-p", help="Loopback port to listen on (0 = any free port)."
    ),
    kafka: bool = typer.Option(
        False, "--kafka", help="Run Apache Kafka itself (Java 17+; jars fetched once by Maven)."
    ),
    data: Annotated[
        Path | None,
        typer.Option(help="Apache Kafka only: keep logs and metadata here across restarts."),
    ] = None,
    partitions: int = typer.Option(
        1, "--partitions", min=1, help="Apache Kafka only: partitions of topics created without."
    ),
    startup_timeout: float | None = typer.Option(
        None, help="Seconds to wait for the broker to answer (15 for Tansu, 120 for Kafka)."
    ),
) -> None:
    """Run a broker on 127.0.0.1: Tansu (embedded, data in memory) or Apache Kafka with --kafka."""
    if not kafka and (data is not None or partitions != 1):
        fail("--data and --partitions need --kafka (the embedded Tansu keeps data in memory)")
    console = Console(highlight=False)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    chosen = (
        _kafka(port or None, data, partitions, startup_timeout or 120.0)
        if kafka
        else EmbeddedBroker(port or None, startup_timeout=startup_timeout or 15.0)
    )
    with chosen as running:
        console.print(f"bootstrap: {running.bootstrap}")
        if data is not None:
            where = f"data kept in {data}"
        else:
            where = "data removed on stop" if kafka else "data lives in memory only"
        started = f"{running.name} ready in {running.started_in or 0:.1f} s"
        console.print(f"[dim]{started}; {where}; Ctrl-C to stop[/]")
        while not stop.wait(0.5):
            if not running.is_running():
                console.print(f"[red]the broker exited unexpectedly:[/]\n{running.log_tail()}")
                raise typer.Exit(1)
    console.print("broker stopped")


def register(app: typer.Typer) -> None:
    app.command()(broker)
