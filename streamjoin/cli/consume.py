"""`streamjoin consume TOPIC`: print a topic's records with their key, partition, offset,
timestamp and headers (no consumer group: it reads every partition, commits nothing).

`--wait` waits for a topic that does not exist yet (workers create their output topics when
they start), asking for the list of topics, never for the one topic: a broker that creates
topics on demand would create it with its default partition count."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from aiokafka import ConsumerRecord

from streamjoin.cli import fail
from streamjoin.cli.kafka_options import DEFAULT_BOOTSTRAP, Bootstrap, quiet_logs, run_kafka
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.topics import led_partition_counts, partition_counts
from streamjoin.kafka.watermarks import log_bounds, topic_partitions

__all__ = ("Format", "register", "render")


class Format(enum.StrEnum):
    text = "text"
    json = "json"


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _one_line(text: str | None) -> str | None:
    """Line breaks inside a key or value shown as \\n, so each record stays one line."""
    return None if text is None else text.replace("\r", "\\r").replace("\n", "\\n")


def render(record: ConsumerRecord[bytes, bytes], fmt: Format) -> str:
    """One line per record: `key=value` fields for people, or a JSON object for tools."""
    headers = [(name, _text(value) or "") for name, value in record.headers]
    if fmt is Format.json:
        fields: dict[str, Any] = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": _text(record.key),
            "value": _text(record.value),
            "headers": dict(headers),
        }
        return json.dumps(fields, ensure_ascii=False)
    when = datetime.fromtimestamp(record.timestamp / 1000, UTC).isoformat(timespec="milliseconds")
    parts = [
        f"partition={record.partition}",
        f"offset={record.offset}",
        f"timestamp={when.replace('+00:00', 'Z')}",
        f"key={_one_line(_text(record.key))}",
    ]
    if headers:
        parts.append("headers=" + ",".join(f"{k}={_one_line(v)}" for k, v in headers))
    parts.append(f"value={_one_line(_text(record.value))}")
    return " ".join(parts)


_WAIT_POLL_S = 0.5


async def _created_later(
    kafka: KafkaConnection, topic: str, wait: bool, give_up_s: float | None
) -> bool:
    """Whether `topic` had to be waited for (False: it exists). Without `wait` a missing topic
    is an error at once; with it, one line says the command waits, until `give_up_s`."""
    async with open_admin(kafka) as admin:
        if topic in await partition_counts(admin):
            return False
        if not wait:
            raise ConfigurationError(
                f"topic {topic!r} does not exist at {kafka} (--wait waits for it to be created)"
            )
        typer.echo(
            f"waiting for topic {topic!r} to be created at {kafka} (Ctrl-C to stop)", err=True
        )
        started = time.monotonic()
        # Until it has leaders: fetching from partitions without one fails with error lines.
        while topic not in await led_partition_counts(admin):
            if give_up_s is not None and time.monotonic() - started > give_up_s:
                raise ConfigurationError(
                    f"topic {topic!r} was not created at {kafka} within {give_up_s:g} s (--timeout)"
                )
            await asyncio.sleep(_WAIT_POLL_S)
    return True


@contextlib.contextmanager
def _quiet_offset_retries(quiet: bool) -> Iterator[None]:
    """A topic created a moment ago answers ListOffsets only once its leaders have loaded it,
    shortly after the metadata shows them; aiokafka logs each retry until then as an error."""
    fetcher = logging.getLogger("aiokafka.consumer.fetcher")
    level = fetcher.level
    if quiet:
        fetcher.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        fetcher.setLevel(level)


async def _consume(
    kafka: KafkaConnection,
    topic: str,
    *,
    from_beginning: bool,
    wait: bool,
    limit: int | None,
    idle_s: float | None,
    fmt: Format,
) -> int:
    # Every record of a topic created after the command started is new: read it all.
    created_later = await _created_later(kafka, topic, wait, idle_s)
    from_beginning = created_later or from_beginning
    partitions = await topic_partitions(kafka, [topic])
    # Where each partition ends now, from a fetch (ListOffsets is wrong on the embedded broker).
    ends = (
        {}
        if from_beginning
        else {(b.topic, b.partition): b.end for b in await log_bounds(kafka, partitions)}
    )
    consumer = kafka.consumer(enable_auto_commit=False)
    await consumer.start()
    printed, last_seen = 0, time.monotonic()
    try:
        consumer.assign(partitions)
        if from_beginning:
            with _quiet_offset_retries(created_later):
                await consumer.seek_to_beginning(*partitions)
        for tp in partitions:
            if not from_beginning:
                consumer.seek(tp, ends[(tp.topic, tp.partition)])
        while limit is None or printed < limit:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    if limit is not None and printed >= limit:
                        break
                    typer.echo(render(record, fmt))
                    printed += 1
            if batches:
                last_seen = time.monotonic()
            elif idle_s is not None and time.monotonic() - last_seen > idle_s:
                break
    finally:
        await consumer.stop()
    return printed


def consume(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to read.")],
    *,
    from_beginning: Annotated[
        bool,
        typer.Option("--from-beginning", help="Start at the oldest record, not at the end."),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="If TOPIC does not exist yet, wait until it is created (then read all of it).",
        ),
    ] = False,
    max_records: Annotated[
        int | None,
        typer.Option("--max", metavar="N", help="Stop after N records.", show_default="no limit"),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Stop when no record has come for this long (or, with --wait, no topic).",
            show_default="wait for more",
        ),
    ] = None,
    fmt: Annotated[
        Format, typer.Option("--format", help="One line per record: key=value fields or JSON.")
    ] = Format.text,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Print a topic's records, one per line, until --max, --timeout or Ctrl-C."""
    quiet_logs()
    if max_records is not None and max_records < 1:
        fail(f"--max {max_records}: give at least 1")
    if timeout is not None and timeout <= 0:
        fail(f"--timeout {timeout}: give a number of seconds above 0")
    run_kafka(
        _consume(
            security.connection(bootstrap),
            topic,
            from_beginning=from_beginning,
            wait=wait,
            limit=max_records,
            idle_s=timeout,
            fmt=fmt,
        )
    )


def register(app: typer.Typer) -> None:
    app.command()(security_options(consume))
