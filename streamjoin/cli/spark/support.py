"""What the Spark commands (backfill, audit, archive) share: the check that Spark can run here,
the options every one of them takes, and failures as one line instead of a traceback.

Nothing here imports PySpark: without it the commands say how to install it and exit 2.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.dsl.app import App
from streamjoin.dsl.loading import load_app
from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError, StreamJoinError
from streamjoin.spark.availability import java_missing, pyspark_missing

__all__ = (
    "ArchiveOption",
    "BootstrapOption",
    "ConfOption",
    "FromOption",
    "MasterOption",
    "ToOption",
    "load_join",
    "load_joins",
    "parse_archives",
    "parse_conf",
    "reported",
    "require_spark",
    "runnable_join",
)

QUIET_SPARK: dict[str, str] = {"spark.log.level": "OFF"}
"""Spark's own log stays off for the commands (it would print a task's failure with its stack
traces, which the commands report as one line); `--conf spark.log.level=WARN` shows it."""

_SPARK_LOG_HINT = "Spark's log: --conf spark.log.level=WARN"

MasterOption = Annotated[
    str,
    typer.Option(
        metavar="URL", help="Spark master, passed through: local[N] here, or a cluster's URL."
    ),
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option(
        "--conf",
        metavar="KEY=VALUE",
        help="A Spark setting (repeatable); overrides the defaults.",
    ),
]
BootstrapOption = Annotated[
    str | None,
    typer.Option(
        metavar="HOST:PORT", help="Kafka bootstrap servers.", show_default="the app's broker"
    ),
]
ArchiveOption = Annotated[
    list[str] | None,
    typer.Option(
        "--archive",
        metavar="TOPIC=PATH",
        help="Read TOPIC from a Parquet archive instead of Kafka: TOPIC=PATH (repeatable).",
    ),
]
FromOption = Annotated[
    str | None,
    typer.Option(
        "--from", metavar="TIME", help="Start of the time range: epoch ms or ISO-8601 (inclusive)."
    ),
]
ToOption = Annotated[
    str | None,
    typer.Option(
        "--to", metavar="TIME", help="End of the time range: epoch ms or ISO-8601 (exclusive)."
    ),
]


def require_spark() -> None:
    """Exit 2 with what to install when PySpark or Java is missing."""
    reason = pyspark_missing() or java_missing()
    if reason is not None:
        fail(escape(reason))
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per connection otherwise


def _reason(exc: BaseException) -> str:
    """One line for `exc`: from a failure that carries a Python traceback (a Python worker's,
    inside Spark's message), the exception line that ends it; else the message's first line."""
    lines = str(exc).splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    if starts:
        after = lines[starts[-1] + 1 :]
        raised = next((line for line in after if line.strip() and not line[0].isspace()), "")
        if raised:
            return raised.strip()
    first = next((line.strip() for line in lines if line.strip()), "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@contextmanager
def reported(what: str, hint: str = _SPARK_LOG_HINT) -> Iterator[None]:
    """Any failure in the block as one line saying `what` failed, why, and `hint` (what to do),
    never a traceback: bad input exits 2, a failure 1, an interrupt 130."""
    try:
        yield
    except typer.Exit:
        raise
    except StreamJoinError as exc:
        fail(escape(str(exc)))
    except KeyboardInterrupt:
        fail(escape(f"{what}: interrupted"), 130)
    except Exception as exc:  # noqa: BLE001 - every failure, as one line
        fail(escape(f"{what} failed: {_reason(exc)} ({hint})"), 1)


def _pairs(values: list[str] | None, what: str, example: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for text in values or []:
        name, sep, value = text.partition("=")
        if not sep or not name or not value:
            raise ConfigurationError(f"{what} {text!r}: use {example}")
        found[name.strip()] = value.strip()
    return found


def parse_conf(values: list[str] | None) -> dict[str, str]:
    """The Spark settings of `--conf`, over the commands' own (QUIET_SPARK)."""
    return {**QUIET_SPARK, **_pairs(values, "--conf", "KEY=VALUE, e.g. spark.driver.memory=4g")}


def parse_archives(values: list[str] | None) -> dict[str, str]:
    return _pairs(values, "--archive", "TOPIC=PATH, e.g. clicks=/data/archive/clicks")


def load_join(reference: str, app_dir: Path, join: str) -> tuple[App, JoinSpec]:
    """The app of `reference` and its join `join`; an app module that fails to import is one
    line too."""
    loaded, specs = load_joins(reference, app_dir, [join])
    return loaded, specs[0]


def load_joins(
    reference: str, app_dir: Path, joins: list[str] | None
) -> tuple[App, list[JoinSpec]]:
    """The app of `reference` and its joins named `joins` (all of them when None)."""
    where = f"the error is in the app's module or what it imports, from {app_dir.resolve()}"
    with reported(f"importing app {reference!r}", where):
        loaded = load_app(reference, app_dir)
        if joins:
            specs = [runnable_join(loaded, name) for name in dict.fromkeys(joins)]
        else:
            specs = [s for s in loaded.joins if not _internal_half(s)]
    return loaded, specs


def _internal_half(spec: JoinSpec) -> bool:
    return spec.foreign_key is not None and spec.foreign_key.side == "right"


def runnable_join(app: App, name: str) -> JoinSpec:
    """The join `name` as Spark runs it: any kind, a foreign-key join by its own name (not its
    internal "-fk" half)."""
    spec = app.get_join(name)
    if _internal_half(spec):
        raise ConfigurationError(
            f"join {name!r} is the internal half of the foreign-key join "
            f"{name.removesuffix('-fk')!r}: give that name"
        )
    return spec
