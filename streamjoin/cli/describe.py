"""`streamjoin describe app:joins`: the app's topology, as Kafka Streams' `Topology.describe()`
prints it - sub-topologies, their source topics, steps, join processors and stores, and every
internal topic with its partition count. `--format json` for tools.

Without `--bootstrap` it needs no broker: partition counts come from the app's declarations
(shown as "?" where a source topic declares none); with it, from the broker's topics.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from streamjoin.cli import fail
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.dsl.loading import load_app
from streamjoin.dsl.topology import compile_topology
from streamjoin.errors import StreamJoinError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.topics import partition_counts
from streamjoin.runtime.topology.description import describe_topology

__all__ = ("register",)


async def _broker_counts(kafka: KafkaConnection) -> dict[str, int]:
    async with open_admin(kafka) as admin:
        return await partition_counts(admin)


def describe(
    app: Annotated[str, typer.Argument(help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")],
    app_dir: Annotated[Path, typer.Option(help="Directory to import MODULE from.")] = Path("."),
    output_format: Annotated[
        str, typer.Option("--format", help="text (readable) or json (for tools).")
    ] = "text",
    bootstrap: Annotated[
        str | None,
        typer.Option(help="Read partition counts from this broker (default: declared ones)."),
    ] = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Print the app's topology: sub-topologies, steps, joins, stores and internal topics."""
    if output_format not in ("text", "json"):
        fail(f"--format {output_format!r}: use text or json")
    try:
        loaded = load_app(app, app_dir)
        existing = (
            asyncio.run(_broker_counts(security.connection(bootstrap, loaded.settings.security)))
            if bootstrap
            else {}
        )
        topology = compile_topology(loaded, existing, require_sources=bootstrap is not None)
    except StreamJoinError as exc:
        fail(str(exc))
    description = describe_topology(topology)
    if output_format == "json":
        typer.echo(json.dumps(description, indent=2))
    else:
        typer.echo(render(description))


def _count(partitions: int | None) -> str:
    return "? partitions" if partitions is None else f"{partitions} partitions"


def _read_as(reader: dict[str, Any], merged: bool) -> str:
    """How a member reads a source: its side of a join, named with the member when merged."""
    if not merged:
        return str(reader["side"])
    return f"{reader['side']} of {reader['member']}" if reader["side"] else reader["member"]


def _member_lines(member: dict[str, Any], prefix: str) -> list[str]:
    """A join's or key_by's processors and sink; `prefix` names it in a merged sub-topology."""
    lines = []
    processor = member["processor"]
    if member["kind"] == "join":
        window = processor["window"]
        reach = (
            ""
            if window is None
            else f", window before={window['before_ms']}ms after={window['after_ms']}ms "
            f"grace={window['grace_ms']}ms"
        )
        lines.append(f"    Processor: {prefix}{processor['how']} {processor['kind']}{reach}")
        if "global_store" in processor:
            lines.append(
                f"      global store: {processor['global_store']}, looked up by "
                f"{processor['lookup']}"
            )
        for store in processor["stores"]:
            source = " (the table's own topic)" if store["source_topic"] else ""
            lines.append(
                f"      store: {store['name']} ({store['kind']}), "
                f"changelog {store['changelog']}{source}"
            )
    else:
        lines += [f"    Processor: {prefix}{step}" for step in processor["steps"]]
    sink = member["sink"]
    onward = "".join(f" --> Sub-topology {n}" for n in sink["read_by"])
    lines.append(f"    Sink: {sink['topic']} ({_count(sink['partitions'])}){onward}")
    return lines


def render(description: dict[str, Any]) -> str:
    """The description as indented text, one node a line, `-->` where records go next."""
    lines = [f"Topology of app {description['app']!r}:"]
    for sub in description["subtopologies"]:
        tasks = "?" if sub["tasks"] is None else sub["tasks"]
        stateless = ", stateless" if sub["stateless"] else ""
        lines.append(f"  Sub-topology {sub['id']}: {sub['name']} ({tasks} tasks{stateless})")
        merged = len(sub["members"]) > 1
        for source in sub["sources"]:
            read_as = source["read_as"]
            sides = [_read_as(r, merged) for r in read_as if merged or r["side"]]
            side = f" [{', '.join(sides)}]" if sides else ""
            lines.append(f"    Source: {source['topic']} ({_count(source['partitions'])}){side}")
            for reader in read_as:
                whose = f" (for {reader['member']})" if merged else ""
                lines += [f"      --> {step}{whose}" for step in reader["steps"]]
        for member in sub["members"]:
            lines += _member_lines(member, f"{member['name']}: " if merged else "")
    lines.append("  Internal topics:")
    for topic in description["internal_topics"]:
        lines.append(
            f"    {topic['topic']}: {topic['kind']} of {topic['of']}, {_count(topic['partitions'])}"
        )
    if description["global_tables"]:
        lines.append("  Global tables (every worker holds each whole):")
    for table in description["global_tables"]:
        lines.append(
            f"    {table['store']}: source {table['source']} ({_count(table['partitions'])}), "
            f"read by {', '.join(table['read_by'])}"
        )
    lines += [f"Warning: {warning}" for warning in description["warnings"]]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command()(security_options(describe))
