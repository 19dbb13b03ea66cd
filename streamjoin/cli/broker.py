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
from streamjoin.broker.kafka import Listener
from streamjoin.broker.kafka_jars import fetch_kafka_jars, kafka_jars_dir, kafka_version
from streamjoin.cli import fail
from streamjoin.kafka.client_properties import client_properties, properties_text

__all__ = ("register",)


def _kafka(
    port: int | None,
    *,
    data: Path | None,
    partitions: int,
    timeout: float,
    listeners: list[Listener],
    users: dict[str, str],
) -> Broker:
    """Apache Kafka, its jars fetched by Maven on first use."""
    console = Console(stderr=True, highlight=False)
    if not (kafka_jars_dir() / ".complete").is_file():
        console.print(f"fetching Apache Kafka {kafka_version()}'s jars with Maven (once)...")
        fetch_kafka_jars()
    return KafkaBroker(
        port,
        data_dir=data,
        partitions=partitions,
        startup_timeout=timeout,
        listeners=listeners,
        users=users,
    )


def _secured(port: int, tls: bool, sasl_scram: str | None) -> tuple[list[Listener], dict[str, str]]:
    """The listeners `--tls` and `--sasl-scram` ask for: TLS on the next port, SASL (over TLS
    with --tls) on the one after (free ports when --port is 0)."""
    listeners, users = [], {}
    if tls:
        listeners.append(Listener("SSL", "SSL", port=port + 1 if port else None))
    if sasl_scram is not None:
        user, colon, password = sasl_scram.partition(":")
        if not (user and colon and password):
            fail(f"--sasl-scram {sasl_scram!r}: give USER:PASSWORD")
        users[user] = password
        protocol = "SASL_SSL" if tls else "SASL_PLAINTEXT"
        listeners.append(Listener("SASL", protocol, port=port + 2 if port else None))
    return listeners, users


def _print_clients(running: KafkaBroker, console: Console) -> None:
    """Each secured listener's address and a client.properties file for it."""
    for listener in running.listeners:
        security = running.client_security(listener.name)
        path = running.directory / f"client-{listener.name.lower()}.properties"
        path.touch(mode=0o600)
        path.write_text(properties_text(client_properties(security)))
        console.print(
            f"bootstrap: {running.address(listener.name)} ({listener.protocol}"
            f"{', SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512' if listener.uses_sasl else ''}); "
            f"client settings: --kafka-config {path}",
            soft_wrap=True,
        )


def broker(  # noqa: PLR0917 - one parameter per command-line option
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
    tls: bool = typer.Option(
        False,
        "--tls",
        help="Apache Kafka only: also a TLS listener on the next port, with certificates made "
        "at the first start.",
    ),
    sasl_scram: Annotated[
        str | None,
        typer.Option(
            "--sasl-scram",
            metavar="USER:PASSWORD",
            help="Apache Kafka only: also a SASL listener (over TLS with --tls) two ports up, "
            "with this user for SCRAM-SHA-256/512 and PLAIN.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run a broker on 127.0.0.1: Tansu (embedded, data in memory) or Apache Kafka with --kafka."""
    if not kafka and (data is not None or partitions != 1 or tls or sasl_scram is not None):
        fail(
            "--data, --partitions, --tls and --sasl-scram need --kafka (the embedded Tansu keeps "
            "data in memory and serves neither TLS nor SCRAM)"
        )
    listeners, users = _secured(port, tls, sasl_scram)
    console = Console(highlight=False)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    chosen = (
        _kafka(
            port or None,
            data=data,
            partitions=partitions,
            timeout=startup_timeout or 120.0,
            listeners=listeners,
            users=users,
        )
        if kafka
        else EmbeddedBroker(port or None, startup_timeout=startup_timeout or 15.0)
    )
    with chosen as running:
        console.print(f"bootstrap: {running.bootstrap}" + (" (PLAINTEXT)" if listeners else ""))
        if isinstance(running, KafkaBroker):
            _print_clients(running, console)
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
