"""`streamjoin produce TOPIC`: send records read from stdin, to try an app without other tools.

Every line is checked before the first record is sent, so bad input sends nothing.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.cli.kafka_options import DEFAULT_BOOTSTRAP, Bootstrap, quiet_logs, run_kafka
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.topics import partition_counts

__all__ = ("LineRecord", "parse_lines", "register")


@dataclass(frozen=True, slots=True)
class LineRecord:
    key: bytes | None
    value: bytes
    timestamp_ms: int | None


def _field_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _parse(line: str, key_field: str | None, timestamp_field: str | None) -> LineRecord:
    key: str | None
    if key_field is None:
        key, tab, text = line.partition("\t")
        if not tab:
            raise ValueError("no TAB between key and value (expected KEY<TAB>VALUE)")
    else:
        text, key = line, None
    if key is not None and timestamp_field is None:
        return LineRecord(key.encode(), text.encode(), None)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"value is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f"value is JSON {type(value).__name__}, not an object with fields")
    if key_field is not None:
        if key_field not in value:
            raise ValueError(f"no field {key_field!r} for the key")
        key = _field_text(value[key_field])
    timestamp: int | None = None
    if timestamp_field is not None:
        raw = value.get(timestamp_field)
        if type(raw) is not int or raw < 0:
            raise ValueError(
                f"field {timestamp_field!r} is {raw!r}, not a timestamp in epoch milliseconds"
            )
        timestamp = raw
    return LineRecord(None if key is None else key.encode(), text.encode(), timestamp)


def parse_lines(
    lines: list[str], key_field: str | None = None, timestamp_field: str | None = None
) -> list[LineRecord]:
    """One record per non-empty line; raises ConfigurationError naming the first bad line."""
    records: list[LineRecord] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(_parse(line, key_field, timestamp_field))
        except ValueError as exc:
            raise ConfigurationError(f"line {number}: {exc}; nothing was sent") from None
    return records


async def _send(kafka: KafkaConnection, topic: str, records: list[LineRecord]) -> dict[int, int]:
    async with open_admin(kafka) as admin:
        counts = await partition_counts(admin)
    if topic not in counts:
        # Sending would make a broker with auto-creation create it with its default layout.
        raise ConfigurationError(
            f"topic {topic!r} does not exist at {kafka}; create it first with "
            f"`streamjoin topics create {topic} --partitions N`"
        )
    producer = kafka.producer(acks="all", linger_ms=5)
    await producer.start()
    try:
        futures = [
            await producer.send(topic, r.value, key=r.key, timestamp_ms=r.timestamp_ms)
            for r in records
        ]
        await producer.flush()
    finally:
        await producer.stop()
    per_partition: dict[int, int] = {}
    for future in futures:
        partition = (await future).partition
        per_partition[partition] = per_partition.get(partition, 0) + 1
    return per_partition


def produce(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to send to.")],
    key_field: Annotated[
        str | None,
        typer.Option(
            "--key-field",
            metavar="FIELD",
            help="Lines are JSON objects; the key is this field's value.",
        ),
    ] = None,
    timestamp_field: Annotated[
        str | None,
        typer.Option(
            "--timestamp-field",
            metavar="FIELD",
            help="Lines' JSON values carry the record timestamp (epoch ms) in this field.",
            show_default="the time of sending",
        ),
    ] = None,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Send records read from stdin, one per line.

    Each line is KEY<TAB>VALUE, or a JSON object with --key-field naming the key's field.
    Reads stdin to its end and checks every line first: a bad line sends nothing.
    """
    quiet_logs()
    if key_field is not None and not key_field:
        fail("--key-field needs a field name")
    try:
        records = parse_lines(sys.stdin.read().splitlines(), key_field, timestamp_field)
    except ConfigurationError as exc:
        fail(escape(str(exc)))
    if not records:
        fail("no records on stdin (one per line: KEY<TAB>VALUE, or JSON with --key-field)")
    sent = run_kafka(_send(security.connection(bootstrap), topic, records))
    spread = ", ".join(f"{p}: {n}" for p, n in sorted(sent.items()))
    typer.echo(f"sent {len(records)} records to {topic} (by partition {spread})")


def register(app: typer.Typer) -> None:
    app.command()(security_options(produce))
