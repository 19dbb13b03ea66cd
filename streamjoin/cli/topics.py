"""`streamjoin topics create|list|describe`: manage topics on any Kafka broker, so an app can be
tried without Kafka's own tools (the embedded broker ships none)."""

from __future__ import annotations

from typing import Annotated

import typer

from streamjoin.cli import fail
from streamjoin.cli.kafka_options import DEFAULT_BOOTSTRAP, Bootstrap, quiet_logs, run_kafka
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.topics import TopicSpec, create_topics, partition_counts, topic_config
from streamjoin.kafka.watermarks import log_bounds, topic_partitions

__all__ = ("register",)

topics = typer.Typer(name="topics", help="Create, list and describe topics.", no_args_is_help=True)


def _config(compact: bool, entries: list[str]) -> dict[str, str]:
    config: dict[str, str] = {"cleanup.policy": "compact"} if compact else {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            fail(f"--config {entry!r}: expected KEY=VALUE, e.g. retention.ms=86400000")
        config[key.strip()] = value
    return config


@topics.command("create")
@security_options
def create(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="Topics to create.")],
    *,
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions", "-p", metavar="INTEGER", help="Partitions of each topic (at least 1)."
        ),
    ],
    compact: Annotated[
        bool, typer.Option("--compact", help="Keep the latest value per key (cleanup.policy).")
    ] = False,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            metavar="KEY=VALUE",
            help="A topic setting, e.g. retention.ms=86400000 (repeatable).",
        ),
    ] = None,
    if_not_exists: Annotated[
        bool,
        typer.Option(
            "--if-not-exists", help="Leave topics that exist as they are instead of refusing."
        ),
    ] = False,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Create topics; refuses, creating none, if one of them exists already."""
    quiet_logs()
    if partitions < 1:
        fail(f"--partitions {partitions}: a topic needs at least 1 partition")
    if len(set(names)) != len(names):
        fail(f"a topic is named twice: {' '.join(names)}")
    settings = _config(compact, config or [])
    specs = [TopicSpec(n, partitions, settings) for n in names]
    existed = run_kafka(
        create_topics(security.connection(bootstrap), specs, if_not_exists=if_not_exists)
    )
    extra = "".join(f", {k}={v}" for k, v in sorted(settings.items()))
    for name in names:
        if name in existed:
            typer.echo(f"topic {name} exists ({existed[name]} partitions), left as it is")
        else:
            typer.echo(f"created topic {name} ({partitions} partitions{extra})")


async def _list(kafka: KafkaConnection) -> dict[str, int]:
    async with open_admin(kafka) as admin:
        return await partition_counts(admin)


@topics.command("list")
@security_options
def list_topics(
    internal: Annotated[
        bool, typer.Option("--internal", help="Also list the broker's own topics (__*).")
    ] = False,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """List topics with their partition counts."""
    quiet_logs()
    counts = run_kafka(_list(security.connection(bootstrap)))
    shown = sorted(n for n in counts if internal or not n.startswith("__"))
    width = max((len(n) for n in shown), default=0)
    for name in shown:
        typer.echo(f"{name:<{width}}  {counts[name]:>4} partitions")


async def _describe(kafka: KafkaConnection, name: str, all_config: bool) -> list[str]:
    partitions = await topic_partitions(kafka, [name])
    async with open_admin(kafka) as admin:
        config = await topic_config(admin, name)
    bounds = await log_bounds(kafka, partitions)
    settings = ", ".join(
        f"{key}={value}" + (" (default)" if default else "")
        for key, (value, default) in sorted(config.items())
        if all_config or not default
    )
    lines = [
        f"topic       {name}",
        f"partitions  {len(partitions)}",
        f"config      {settings or 'none set on the topic'}",
        f"records     {sum(b.end - b.start for b in bounds)}",
        "  partition  start offset  end offset",
    ]
    lines += [f"  {b.partition:>9}  {b.start:>12}  {b.end:>10}" for b in bounds]
    return lines


@topics.command("describe")
@security_options
def describe(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="Topics to describe.")],
    all_config: Annotated[
        bool,
        typer.Option(
            "--all-config",
            help="Show every setting, defaults too (the embedded broker labels even the "
            "topic's own settings as defaults).",
        ),
    ] = False,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Show a topic's partitions, configuration and each partition's start and end offsets."""
    quiet_logs()
    kafka = security.connection(bootstrap)
    for i, name in enumerate(names):
        if i:
            typer.echo("")
        typer.echo("\n".join(run_kafka(_describe(kafka, name, all_config))))


def register(app: typer.Typer) -> None:
    app.add_typer(topics)
