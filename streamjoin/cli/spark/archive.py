"""`streamjoin archive TOPIC --to PATH`: a topic's records to Parquet, so history outlives
Kafka retention."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.cli.spark.support import (
    ConfOption,
    MasterOption,
    parse_conf,
    reported,
    require_spark,
)

__all__ = ("register",)


def archive(  # noqa: PLR0917 - one parameter per command-line option
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="The topic to archive.")],
    to: Annotated[
        str,
        typer.Option("--to", metavar="PATH", help="Parquet directory to write (any Spark path)."),
    ],
    bootstrap: Annotated[
        str, typer.Option(metavar="HOST:PORT", help="Kafka bootstrap servers.")
    ] = "localhost:9092",
    append: Annotated[
        bool, typer.Option(help="Add only the records archived since the last run.")
    ] = False,
    master: MasterOption = "local[*]",
    conf: ConfOption = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Write a topic's records to Parquet, up to each partition's high watermark."""
    require_spark()
    from streamjoin.spark import archive as spark_archive  # noqa: PLC0415 - optional extra
    from streamjoin.spark import session  # noqa: PLC0415

    console = Console(highlight=False)
    with (
        reported(f"archive of topic {topic!r}"),
        session.spark_session(master, parse_conf(conf), "streamjoin-archive") as spark,
    ):
        written = spark_archive.archive_topic(
            spark, security.connection(bootstrap), topic, to, append=append
        )
    offsets = sum(r.size for r in written)
    console.print(f"archived {offsets} offsets of {topic!r} from {len(written)} partitions to {to}")


def register(app: typer.Typer) -> None:
    app.command()(security_options(archive))
