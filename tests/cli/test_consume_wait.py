"""`streamjoin consume TOPIC --wait` waits for a topic that does not exist yet (the workers
create their output topic after a user may have started reading it), then reads all of it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from streamjoin.broker import Broker
from streamjoin.cli import app

pytestmark = pytest.mark.broker

runner = CliRunner()


def _cli(broker: Broker, *args: str, stdin: str | None = None) -> str:
    result = runner.invoke(app, [*args, "--bootstrap", broker.bootstrap], input=stdin)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_consume_waits_for_the_topic_and_reads_it_from_its_beginning(
    broker: Broker, unique: str
) -> None:
    name = f"later-{unique}"
    command = [sys.executable, "-m", "streamjoin", "consume", name, "--wait", "--max", "3"]
    with subprocess.Popen(
        [*command, "--format", "json", "--bootstrap", broker.bootstrap],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as reader:
        try:
            assert reader.stderr is not None
            waiting = reader.stderr.readline()  # blocks until the command says it waits
            assert waiting.strip() == (
                f"waiting for topic {name!r} to be created at {broker.bootstrap} (Ctrl-C to stop)"
            )
            _cli(broker, "topics", "create", name, "--partitions", "2")
            _cli(broker, "produce", name, stdin="a\t1\nb\t2\nc\t3\n")
            out, err = reader.communicate(timeout=120)
        finally:
            reader.kill()
    assert reader.returncode == 0, err
    assert err == "", "nothing more on stderr: no retries shown while the new topic's leaders load"
    records = [json.loads(line) for line in out.splitlines()]
    # Everything in a topic created after the command started is new to it: none is skipped.
    assert sorted((r["key"], r["value"]) for r in records) == [("a", "1"), ("b", "2"), ("c", "3")]


def test_waiting_ends_at_the_timeout_with_one_line_and_creates_nothing(
    broker: Broker, unique: str
) -> None:
    name = f"never-{unique}"
    started = time.monotonic()
    result = runner.invoke(
        app, ["consume", name, "--wait", "--timeout", "1", "--bootstrap", broker.bootstrap]
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("waiting for topic")
    assert lines[1:] == [
        f"error: topic {name!r} was not created at {broker.bootstrap} within 1 s (--timeout)"
    ]
    assert time.monotonic() - started >= 1
    assert name not in _cli(broker, "topics", "list")


def test_without_wait_a_missing_topic_is_an_error_at_once(broker: Broker, unique: str) -> None:
    name = f"absent-{unique}"
    result = runner.invoke(app, ["consume", name, "--bootstrap", broker.bootstrap])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: topic {name!r} does not exist at {broker.bootstrap} "
        "(--wait waits for it to be created)\n"
    )
