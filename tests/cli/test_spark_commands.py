"""`streamjoin backfill`, `audit` and `archive` without Spark: they say how to install it; and
bad options are one-line errors (exit 2) before any Spark job starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.cli import app

runner = CliRunner()

COMMANDS = [
    ["backfill", "app:joins", "--join", "j", "--output", "out"],
    ["audit", "app:joins", "--join", "j"],
    ["archive", "clicks", "--to", "out"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_without_pyspark_the_commands_say_how_to_install_it(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "streamjoin.cli.spark_support.pyspark_missing",
        lambda: (
            "PySpark is not installed; install the Spark extra: pip install 'streamjoin[spark]'"
        ),
    )
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert "pip install 'streamjoin[spark]'" in result.output


@pytest.mark.parametrize("command", COMMANDS[:2], ids=lambda c: c[0])
def test_without_java_the_commands_say_so(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streamjoin.cli.spark_support.java_missing", lambda: "Spark needs Java 17")
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
