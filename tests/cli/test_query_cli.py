"""`streamjoin query` refuses options that do not fit the store or each other, in one line and
before asking any worker (the endpoint given does not exist)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.cli import app

E2E = Path(__file__).resolve().parents[1] / "runtime" / "e2e"
runner = CliRunner()
WHERE = ["--endpoint", "127.0.0.1:1", "--app-dir", str(E2E)]


@pytest.mark.parametrize(
    ("module", "arguments", "error"),
    [
        (
            "query_app",
            ["users-local", "user-1", "--from-key", "user-1"],
            "give a KEY or a key range (--from-key/--to-key/--limit), not both",
        ),
        (
            "query_app",
            ["users-local", "--from", "5"],
            "--from/--to (times) apply to a KEY of a window store; key ranges: --from-key/--to-key",
        ),
        (
            "query_app",
            ["attribute-left", "--to-key", "b"],
            "store 'attribute-left' (window) is not ordered by key: give a KEY",
        ),
        (
            "query_tables_app",
            ["prices-local", "--limit", "5"],
            "store 'prices-local' (versioned) is not ordered by key: give a KEY",
        ),
        (
            "query_tables_app",
            ["orders-local", "o1", "--as-of", "5"],
            "--as-of applies to a KEY of a versioned table; 'orders-local' is a table",
        ),
    ],
)
def test_options_that_do_not_fit_are_one_line_and_exit_status_2(
    module: str, arguments: list[str], error: str
) -> None:
    result = runner.invoke(app, ["query", f"{module}:joins", *arguments, *WHERE])
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == f"error: {error}"
