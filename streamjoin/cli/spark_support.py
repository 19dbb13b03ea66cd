"""What the Spark commands (backfill, audit, archive) share: the check that Spark can run here,
and the options every one of them takes.

Nothing here imports PySpark: without it the commands say how to install it and exit 2.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.spark.availability import java_missing, pyspark_missing

__all__ = (
    "ArchiveOption",
    "BootstrapOption",
    "ConfOption",
    "FromOption",
    "MasterOption",
    "ToOption",
    "parse_archives",
    "parse_conf",
    "require_spark",
    "runnable_join",
)

MasterOption = Annotated[
    str,
    typer.Option(help="Spark master, passed through: local[N] here, or a cluster's URL."),
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option("--conf", help="A Spark setting KEY=VALUE (repeatable); overrides the defaults."),
]
BootstrapOption = Annotated[
    str | None,
    typer.Option(help="Kafka bootstrap servers (default: the app's broker)."),
]
ArchiveOption = Annotated[
    list[str] | None,
    typer.Option(
        "--archive",
        help="Read TOPIC from a Parquet archive instead of Kafka: TOPIC=PATH (repeatable).",
    ),
]
FromOption = Annotated[
    str | None,
    typer.Option("--from", help="Start of the time range: epoch ms or ISO-8601 (inclusive)."),
]
ToOption = Annotated[
    str | None,
    typer.Option("--to", help="End of the time range: epoch ms or ISO-8601 (exclusive)."),
]


def require_spark() -> None:
    """Exit 2 with what to install when PySpark or Java is missing."""
    reason = pyspark_missing() or java_missing()
    if reason is not None:
        fail(escape(reason))


def _pairs(values: list[str] | None, what: str, example: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for text in values or []:
        name, sep, value = text.partition("=")
        if not sep or not name or not value:
            raise ConfigurationError(f"{what} {text!r}: use {example}")
        found[name.strip()] = value.strip()
    return found


def parse_conf(values: list[str] | None) -> dict[str, str]:
    return _pairs(values, "--conf", "KEY=VALUE, e.g. spark.driver.memory=4g")


def parse_archives(values: list[str] | None) -> dict[str, str]:
    return _pairs(values, "--archive", "TOPIC=PATH, e.g. clicks=/data/archive/clicks")


def runnable_join(app: App, name: str) -> JoinSpec:
    """The join `name`, if Spark can run it: filter/map_values run there as in the worker, and
    a join reading another join's output reads that topic; not yet a join that reads through
    a key_by (Spark would shuffle instead of reading the repartition topic)."""
    spec = app.get_join(name)
    rekeyed = {r.topic.name: r for r in app.repartitions}
    for side, topic in (("left", spec.left), ("right", spec.right)):
        repartition = rekeyed.get(topic.name)
        if repartition is not None:
            through = ", ".join(s.describe() for s in (*repartition.steps, repartition.key_by))
            raise ConfigurationError(
                f"join {name!r}: its {side} input goes through {through}, which Spark "
                "backfill/audit cannot run yet (no Spark shuffle for key_by); run this join "
                "with the worker"
            )
    return spec
