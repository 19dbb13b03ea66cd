"""`streamjoin backfill MODULE:ATTR [--join NAME ...]`: run joins over history as one Spark batch
job (every join of the app unless `--join` names some)."""

from __future__ import annotations

import time
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
    load_joins,
    parse_archives,
    parse_conf,
    reported,
    require_spark,
)
from streamjoin.errors import ConfigurationError

__all__ = ("register",)


def backfill(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[
        str, typer.Argument(metavar="APP", help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")
    ],
    join: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME",
            help="A join to run (repeatable); every join of the app when not given.",
        ),
    ] = None,
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
        str | None,
        typer.Option(
            metavar="PATH",
            help="Write the results to Parquet here (PATH/JOIN for each of several joins).",
        ),
    ] = None,
    output_topic: Annotated[
        str | None, typer.Option(metavar="TOPIC", help="Produce the results to this topic instead.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --output.")] = False,
    master: MasterOption = "local[*]",
    conf: ConfOption = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Run joins over history (Kafka or Parquet archives) as one Spark batch job."""
    require_spark()
    from streamjoin.spark import backfill as job  # noqa: PLC0415 - optional extra
    from streamjoin.spark import inputs, pipeline, session  # noqa: PLC0415
    from streamjoin.spark.kafka import offsets as ranges  # noqa: PLC0415

    console = Console(highlight=False)
    started = time.monotonic()
    loaded, specs = load_joins(app, app_dir, join)
    what = "backfill of " + (f"join {join[0]!r}" if join and len(join) == 1 else f"app {app!r}")
    with reported(what):
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
        if output_topic is not None and len(specs) > 1:
            raise ConfigurationError(
                "--output-topic takes the results of one join: name it with --join"
            )
        options = pipeline.JoinOptions(
            skip_failures=loaded.settings.on_error == "dlq",
            max_record_bytes=loaded.settings.max_record_bytes,
        )
        name = f"streamjoin-backfill-{specs[0].name if len(specs) == 1 else loaded.app_id}"
        with session.spark_session(master, parse_conf(conf), name) as spark:
            planned = job.backfill(
                spark, loaded, specs, sources, time_range=time_range, options=options
            )
            for spec in specs:
                records = planned.records(spec).cache()
                count = records.count()
                job.write_output(planned, spec, records, target)
                records.unpersist()
                where = (
                    job.output_path(target, spec, len(specs) > 1)
                    if output is not None
                    else f"topic {output_topic!r}"
                )
                console.print(
                    f"join {spec.name!r}: {count} records to {where} "
                    f"in {time.monotonic() - started:.1f} s"
                )


def register(app: typer.Typer) -> None:
    app.command()(security_options(backfill))
