"""`streamjoin spark-stream MODULE:ATTR --join NAME`: run a join live on Spark Structured
Streaming, to Parquet (`--output`) or to the join's output topic (`--into-topic`).

The query runs until SIGTERM or Ctrl-C (then stops once its current micro-batch is done), or
with `--available-now` until what the topics held at its start is processed; a run over the
same `--checkpoint` continues where the last one stopped.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from streamjoin.cli import fail
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.cli.spark.support import (
    BootstrapOption,
    ConfOption,
    MasterOption,
    load_join,
    parse_conf,
    reported,
    require_spark,
)
from streamjoin.errors import ConfigurationError

if TYPE_CHECKING:
    from streamjoin.spark.stream_run import BatchProgress

__all__ = ("register",)


class KafkaSource(StrEnum):
    kafka = "kafka"
    python = "python"


def _progress_line(progress: BatchProgress) -> str:
    return (
        f"batch {progress.batch_id}: {progress.input_rows} rows, "
        f"input {progress.input_rows_per_s:,.1f} rows/s, "
        f"processed {progress.processed_rows_per_s:,.1f} rows/s, "
        f"watermark {progress.watermark or '-'}, state {progress.state_rows} rows, "
        f"late {progress.late_rows} ({progress.late_total} in this run)"
    )


DEFAULT_MAX_RECORDS_PER_BATCH = 50_000
"""Per topic and micro-batch. A stream-stream join's state holds a whole micro-batch until the
watermark moves at its end, so one micro-batch of a long backlog holds all of it: 1M shop orders
(3.9M records) in one micro-batch filled the 1 GB driver heap of a local run and spent 14 minutes
collecting garbage without finishing; in micro-batches of 50,000 the run took 178 s (its
backfill 102 s)."""


@contextmanager
def _stop_on_signals(finish_within_s: float) -> Iterator[threading.Event]:
    """An event set by SIGTERM or Ctrl-C while the block runs (the handlers are restored after).
    A second signal ends the process at once: the micro-batch under way may not end soon (a
    joiner that hangs, a JVM short of memory), and the next run over the checkpoint redoes it.
    The lines are written with os.write: a handler may interrupt a print of the main thread."""
    stop = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            os.write(
                1,
                b"stopping at once; the next run over this checkpoint redoes the "
                b"micro-batch under way\n",
            )
            os._exit(128 + signum)  # Spark's JVM ends with its stdin, the pipe from this process
        stop.set()
        os.write(
            1,
            f"stopping once the micro-batch under way is done (at most "
            f"{finish_within_s:.0f} s; signal again to stop at once)\n".encode(),
        )

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def spark_stream(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[
        str, typer.Argument(metavar="APP", help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")
    ],
    join: Annotated[str, typer.Option(metavar="NAME", help="The name of the join to run.")],
    checkpoint: Annotated[
        str,
        typer.Option(
            metavar="PATH",
            help="The query's checkpoint (offsets and join state); a new run continues from it.",
        ),
    ],
    output: Annotated[
        str | None, typer.Option(metavar="PATH", help="Write the results to Parquet here.")
    ] = None,
    into_topic: Annotated[
        bool, typer.Option("--into-topic", help="Produce the results to the join's output topic.")
    ] = False,
    available_now: Annotated[
        bool,
        typer.Option(
            "--available-now", help="Process what the topics hold now, then stop (AvailableNow)."
        ),
    ] = False,
    trigger_interval: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION",
            help="Start a micro-batch this often (e.g. 10s); default: as soon as the last ends.",
        ),
    ] = None,
    kafka_source: Annotated[
        KafkaSource | None,
        typer.Option(
            help="kafka: Spark's Kafka connector (jars fetched once by Maven); "
            "python: streamjoin's source on PySpark's Python Data Source API.",
            show_default="kafka, or python on a broker whose ListOffsets cannot be trusted",
        ),
    ] = None,
    max_records_per_batch: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="At most N input records per topic per micro-batch (a join holds a whole "
            "micro-batch in its state: a backlog read at once fills the memory).",
        ),
    ] = DEFAULT_MAX_RECORDS_PER_BATCH,
    bootstrap: BootstrapOption = None,
    app_dir: Annotated[
        Path, typer.Option(metavar="DIR", help="Directory to import MODULE from.")
    ] = Path("."),
    master: MasterOption = "local[*]",
    conf: ConfOption = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Run a join live on Spark Structured Streaming (to Parquet or to its output topic)."""
    require_spark()
    if (output is None) == (not into_topic):
        fail("give exactly one output: --output PATH or --into-topic")
    from streamjoin.spark import connector, session, stream_run, streaming  # noqa: PLC0415
    from streamjoin.spark.graph import source_topics  # noqa: PLC0415
    from streamjoin.spark.kafka.trust import untrusted_end_offsets  # noqa: PLC0415

    console = Console(highlight=False, soft_wrap=True)
    loaded, spec = load_join(app, app_dir, join)
    with reported(f"spark-stream of join {join!r}"):
        streaming.streamable(loaded, spec)
        trigger = streaming.Trigger(available_now, _interval(trigger_interval))
        settings = parse_conf(conf)
        broker = security.connection(bootstrap or loaded.settings.broker, loaded.settings.security)
        untrusted = untrusted_end_offsets(broker, source_topics(loaded, [spec]))
        official = _official_source(kafka_source, untrusted)
        if kafka_source is None and untrusted is not None:
            console.print(
                f"reading with streamjoin's Python source, not Spark's Kafka connector: {untrusted}"
            )
        source = streaming.StreamSource(
            broker, official=official, max_records_per_batch=max_records_per_batch
        )
        if source.official:
            settings = {**connector.session_settings(master), **settings}
        with (
            session.spark_session(master, settings, f"streamjoin-stream-{join}") as spark,
            _stop_on_signals(stream_run.FINISH_BATCH_S) as stop,
        ):
            if source.official:
                connector.require_connector(spark)
            query = streaming.start_stream(
                spark,
                loaded,
                spec,
                source,
                streaming.StreamTarget(checkpoint, output),
                trigger,
                skip_failures=loaded.settings.on_error == "dlq",
            )
            where = output if output is not None else f"topic {spec.into.name!r}"
            console.print(f"join {join!r}: streaming to {where}, checkpoint {checkpoint}")
            late = stream_run.follow(query, stop, lambda p: console.print(_progress_line(p)))
    console.print(
        f"join {join!r}: stopped, {late} late records dropped (behind the watermark); "
        f"a new run over {checkpoint} continues from here"
    )


def _official_source(chosen: KafkaSource | None, untrusted: str | None) -> bool:
    """Whether to read with Spark's connector: as chosen, by default unless the broker's
    ListOffsets answers (which the connector plans micro-batches from) cannot be trusted."""
    if chosen is KafkaSource.kafka and untrusted is not None:
        raise ConfigurationError(
            f"--kafka-source kafka would miss records on this broker: {untrusted}, and Spark's "
            "connector plans micro-batches from them; use --kafka-source python (the default "
            "here), which plans from fetched high watermarks"
        )
    if chosen is not None:
        return chosen is KafkaSource.kafka
    return untrusted is None


_DURATION = re.compile(r"^(\d+)\s*(ms|s|m|h)$")
_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours"}


def _interval(text: str | None) -> str | None:
    """Spark's "10 seconds" from 10s (or 500ms, 2m, 1h)."""
    if text is None:
        return None
    found = _DURATION.match(text.strip())
    if found is None:
        raise ConfigurationError(
            f"--trigger-interval {text!r}: give a duration such as 10s or 500ms"
        )
    return f"{int(found.group(1))} {_UNITS[found.group(2)]}"


def register(app: typer.Typer) -> None:
    app.command("spark-stream")(security_options(spark_stream))
