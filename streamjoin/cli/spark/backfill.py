"""`streamjoin backfill MODULE:ATTR --join NAME`: run a join over history as a Spark batch job."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.cli.spark.support import (
    ArchiveOption,
    BootstrapOption,
    ConfOption,
    FromOption,
    MasterOption,
    ToOption,
    load_join,
    parse_archives,
    parse_conf,
    reported,
    require_spark,
)

__all__ = ("register",)


def backfill(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[
        str, typer.Argument(metavar="APP", help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")
    ],
    join: Annotated[str, typer.Option(metavar="NAME", help="The name of the join to run.")],
    app_dir: Annotated[
        Path, typer.Option(metavar="DIR", help="Directory to import MODULE from.")
    ] = Path("."),
    from_: FromOption = None,
    to: ToOption = None,
    bootstrap: BootstrapOption = None,
    archive: ArchiveOption = None,
    offsets: Annotated[
        list[str] | None,
        typer.Option(
            "--offsets",
            metavar="TOPIC=START:END",
            help="Narrow a Kafka topic: TOPIC=START:END or TOPIC/PARTITION=START:END "
            "(either bound may be empty; repeatable).",
        ),
    ] = None,
    output: Annotated[
        str | None, typer.Option(metavar="PATH", help="Write the results to Parquet here.")
    ] = None,
    output_topic: Annotated[
        str | None, typer.Option(metavar="TOPIC", help="Produce the results to this topic instead.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --output.")] = False,
    drop_late: Annotated[
        bool,
        typer.Option(help="Leave out the records the streaming job drops as late."),
    ] = False,
    master: MasterOption = "local[*]",
    conf: ConfOption = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Run a join over history (Kafka or Parquet archives) as a Spark batch job."""
    require_spark()
    from streamjoin.spark import backfill as job  # noqa: PLC0415 - optional extra
    from streamjoin.spark import inputs, pipeline, session  # noqa: PLC0415
    from streamjoin.spark.kafka import offsets as ranges  # noqa: PLC0415

    console = Console(highlight=False)
    started = time.monotonic()
    loaded, spec = load_join(app, app_dir, join)
    with reported(f"backfill of join {join!r}"):
        broker = security.connection(bootstrap or loaded.settings.broker, loaded.settings.security)
        sources = inputs.Sources(
            broker,
            parse_archives(archive),
            [ranges.parse_offset_selection(text) for text in offsets or []],
        )
        time_range = inputs.TimeRange(
            None if from_ is None else inputs.parse_instant(from_),
            None if to is None else inputs.parse_instant(to),
        )
        target = job.OutputTarget(output, output_topic, broker, overwrite)
        on_error = loaded.settings.on_error
        options = pipeline.JoinOptions(drop_late=drop_late, skip_failures=on_error == "dlq")
        with session.spark_session(
            master, parse_conf(conf), f"streamjoin-backfill-{join}"
        ) as spark:
            planned = job.backfill(spark, spec, sources, time_range, options)
            cached = replace(planned, records=planned.records.cache())
            count = cached.records.count()
            job.write_output(cached, target, spec)
            cached.records.unpersist()
    where = output if output is not None else f"topic {output_topic!r}"
    console.print(
        f"join {join!r}: {count} records to {where} in {time.monotonic() - started:.1f} s"
    )


def register(app: typer.Typer) -> None:
    app.command()(security_options(backfill))
