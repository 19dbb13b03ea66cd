"""`streamjoin audit MODULE:ATTR [--join NAME ...]`: recompute joins on Spark (every join of the
app unless `--join` names some) and compare each with what the workers wrote; exit 1 when
records are missing, extra or different."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

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

if TYPE_CHECKING:
    from streamjoin.spark.audit.job import AuditReport

__all__ = ("register",)

_MEANING = {
    "missing": "expected, not written, unexplained",
    "extra": "written, but the recomputation has no such record",
    "different": "written with the same key, timestamp and sources, another value",
    "duplicate": "written more than once (at-least-once replays)",
    "not_yet_emitted": "its cause not processed yet, or its window still open",
}


def _render(report: AuditReport, console: Console) -> None:
    console.print(
        f"join {report.join!r}: {report.expected} expected, {report.written} written, "
        f"{report.matched} matched"
    )
    examples = Column("examples", overflow="fold")
    table = Table("difference", "records", "meaning", examples, box=None)
    for name, meaning in _MEANING.items():
        count = report.counts[name]
        shown = "\n".join(report.examples.get(name, [])) if count else ""
        table.add_row(name, str(count), meaning, shown)
    console.print(table)
    for topic, behind in sorted(report.lagging.items()):
        console.print(f"the workers are {behind} records behind on {topic!r}")
    console.print("FAILED: missing, extra or different records" if report.failed else "OK")


def audit(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[
        str, typer.Argument(metavar="APP", help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")
    ],
    join: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME",
            help="A join to audit (repeatable); every join of the app when not given.",
        ),
    ] = None,
    app_dir: Annotated[
        Path, typer.Option(metavar="DIR", help="Directory to import MODULE from.")
    ] = Path("."),
    from_: FromOption = None,
    to: ToOption = None,
    bootstrap: BootstrapOption = None,
    archive: ArchiveOption = None,
    group: Annotated[
        str | None,
        typer.Option(
            metavar="GROUP", help="The workers' consumer group.", show_default="the app id"
        ),
    ] = None,
    examples: Annotated[
        int, typer.Option(metavar="N", help="Examples shown per kind of difference.")
    ] = 5,
    master: MasterOption = "local[*]",
    conf: ConfOption = None,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Compare joins' output with their recomputation on Spark, classifying every difference."""
    require_spark()
    from streamjoin.spark import inputs, pipeline, session  # noqa: PLC0415
    from streamjoin.spark.audit import job as diff  # noqa: PLC0415 - optional extra

    console = Console(highlight=False)
    loaded, specs = load_joins(app, app_dir, join)
    failed = False
    what = "audit of " + (f"join {join[0]!r}" if join and len(join) == 1 else f"app {app!r}")
    with reported(what):
        sources = inputs.Sources(
            security.connection(bootstrap or loaded.settings.broker, loaded.settings.security),
            parse_archives(archive),
        )
        time_range = inputs.TimeRange(
            None if from_ is None else inputs.parse_instant(from_),
            None if to is None else inputs.parse_instant(to),
        )
        name = f"streamjoin-audit-{specs[0].name if len(specs) == 1 else loaded.app_id}"
        with session.spark_session(master, parse_conf(conf), name) as spark:
            options = pipeline.JoinOptions(
                skip_failures=loaded.settings.on_error == "dlq",
                max_record_bytes=loaded.settings.max_record_bytes,
            )
            group_id = group or loaded.app_id
            for spec in specs:
                report = diff.audit(
                    spark,
                    loaded,
                    spec,
                    group_id,
                    sources,
                    time_range=time_range,
                    options=options,
                    examples=examples,
                )
                _render(report, console)
                failed = failed or report.failed
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(security_options(audit))
