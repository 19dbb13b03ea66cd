"""`streamjoin status` refuses what cannot work in one line, before or instead of a traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from streamjoin.cli import app


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "error: give the app (MODULE:ATTRIBUTE) or --group ID --bootstrap HOST:PORT"),
        (["--group", "g"], "error: --group needs --bootstrap HOST:PORT (or the app, whose broker"),
        (["--group", "g", "-b", "x:1", "--interval", "0"], "error: --interval 0.0: give a number"),
        (["nowhere:joins"], "error: cannot import module 'nowhere'"),
        (
            ["--group", "g", "-b", "127.0.0.1:1", "--once"],
            "error: no Kafka broker answers at 127.0.0.1:1 (connection refused)",
        ),
    ],
)
def test_what_cannot_work_is_one_line(
    args: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STREAMJOIN_BOOTSTRAP", raising=False)
    result = CliRunner().invoke(app, ["status", *args])
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith(said), line
