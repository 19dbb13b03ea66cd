"""`streamjoin audit MODULE:ATTR --join NAME`: recompute a join on Spark and diff it against
what the streaming workers wrote; exit 1 when records are missing or wrong."""

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
    load_join,
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
    "duplicate": "written more than once (at-least-once replays)",
    "late_dropped": "a source record arrived after its window + grace",
    "not_yet_emitted": "sources not processed yet, or the window is still open",
    "wrong_value": "written with another key, timestamp or value",
    "unexpected": "written, but the join cannot produce it",
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
    console.print("FAILED: missing or wrong records" if report.failed else "OK")


def audit(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[
        str, typer.Argument(metavar="APP", help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")
    ],
    join: Annotated[str, typer.Option(metavar="NAME", help="The name of the join to audit.")],
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
    """Diff a join's output against its recomputation on Spark, classifying every difference."""
    require_spark()
    from streamjoin.spark import inputs, pipeline, session  # noqa: PLC0415
    from streamjoin.spark.audit import job as diff  # noqa: PLC0415 - optional extra

    console = Console(highlight=False)
    loaded, spec = load_join(app, app_dir, join)
    with reported(f"audit of join {join!r}"):
        sources = inputs.Sources(
            security.connection(bootstrap or loaded.settings.broker, loaded.settings.security),
            parse_archives(archive),
        )
        time_range = inputs.TimeRange(
            None if from_ is None else inputs.parse_instant(from_),
            None if to is None else inputs.parse_instant(to),
        )
        with session.spark_session(master, parse_conf(conf), f"streamjoin-audit-{join}") as spark:
            options = pipeline.JoinOptions(skip_failures=loaded.settings.on_error == "dlq")
            group_id = group or loaded.app_id
            report = diff.audit(
                spark, spec, group_id, sources, time_range, options=options, examples=examples
            )
    _render(report, console)
    if report.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(security_options(audit))
