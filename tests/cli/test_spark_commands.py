"""`streamjoin backfill`, `audit` and `archive` without Spark: they say how to install it; and
bad options are one-line errors (exit 2) before any Spark job starts."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from streamjoin.cli import app
from streamjoin.cli.spark.support import reported

runner = CliRunner()

COMMANDS = [
    ["backfill", "app:joins", "--join", "j", "--output", "out"],
    ["audit", "app:joins", "--join", "j"],
    ["archive", "clicks", "--to", "out"],
    ["spark-stream", "app:joins", "--join", "j", "--output", "out", "--checkpoint", "c"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_without_pyspark_the_commands_say_how_to_install_it(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as in an install without the extra
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "error: PySpark is not installed; install the Spark extra: pip install 'streamjoin[spark]'"
    ]


@pytest.mark.parametrize("command", COMMANDS[:2], ids=lambda c: c[0])
def test_without_java_the_commands_say_so(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streamjoin.cli.spark.support.java_missing", lambda: "Spark needs Java 17")
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert "Spark needs Java 17" in result.output


APP = """
from streamjoin import App, JoinWindows

joins = App("cli")
window = JoinWindows.of(10)
joins.join(joins.topic("a"), joins.topic("b"), window=window, into="c", name="j")(
    lambda left, right: {"l": left, "r": right}
)
"""


def app_module(tmp_path: Path) -> str:
    (tmp_path / "cli_spark_app.py").write_text(APP)
    return str(tmp_path)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--join", "nope", "--output", "x"], "has no join 'nope'"),
        (["--join", "j", "--output", "x", "--archive", "a"], "--archive 'a': use TOPIC=PATH"),
        (["--join", "j", "--output", "x", "--offsets", "a=x:y"], "offsets 'a=x:y'"),
        (["--join", "j", "--output", "x", "--from", "yesterday"], "time 'yesterday'"),
        (["--join", "j", "--from", "5", "--to", "5", "--output", "x"], "the time range is empty"),
        (["--join", "j"], "give exactly one output"),
    ],
)
def test_bad_backfill_options_are_one_line_errors(
    options: list[str], message: str, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, ["backfill", "cli_spark_app:joins", "--app-dir", app_module(tmp_path), *options]
    )
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


BROKEN_APP = "import a_dependency_that_is_not_installed\n"


@pytest.mark.parametrize("command", COMMANDS[:2], ids=lambda c: c[0])
def test_an_app_module_that_fails_to_import_is_one_line(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "broken_app.py").write_text(BROKEN_APP)
    name, _, *options = command
    result = runner.invoke(app, [name, "broken_app:joins", "--app-dir", str(tmp_path), *options])
    assert result.exit_code == 1, result.output
    line = " ".join(result.output.split())
    assert line.startswith("error: importing app 'broken_app:joins' failed: ModuleNotFoundError")
    assert "a_dependency_that_is_not_installed" in line and str(tmp_path) in line
    assert "Traceback" not in result.output


JAVA_FAILURE = """org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in \
stage 1.0 failed 1 times: org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An \
exception was thrown from the Python worker: Traceback (most recent call last):
  File "/app/app.py", line 7, in boom
    raise ValueError("boom")
ValueError: boom
 SQLSTATE: 38000
\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1097)
"""


@pytest.mark.parametrize(
    ("failure", "line"),
    [
        (RuntimeError(JAVA_FAILURE), "ValueError: boom"),
        (OSError("disk full\nmore detail"), "OSError: disk full"),
        (RuntimeError(), "RuntimeError"),
    ],
)
def test_a_failure_is_one_line_saying_what_failed_and_why(failure: Exception, line: str) -> None:
    def command() -> None:
        with reported("backfill of join 'j'"):
            raise failure

    result = runner.invoke(typer_app(command), [])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: backfill of join 'j' failed: {line} (Spark's log: --conf spark.log.level=WARN)"
    ]


def test_an_interrupt_is_one_line_and_exits_130() -> None:
    def command() -> None:
        with reported("audit of join 'j'"):
            raise KeyboardInterrupt

    result = runner.invoke(typer_app(command), [])
    assert result.exit_code == 130
    assert result.output.splitlines() == ["error: audit of join 'j': interrupted"]


def typer_app(command: Callable[[], None]) -> typer.Typer:
    single = typer.Typer()
    single.command()(command)
    return single
