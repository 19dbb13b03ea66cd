"""`streamjoin topics create|list|describe` against the embedded broker."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner, Result

from streamjoin.broker import Broker
from streamjoin.cli import app

pytestmark = pytest.mark.broker

runner = CliRunner()


def run(broker: Broker, *args: str, stdin: str | None = None) -> Result:
    return runner.invoke(app, [*args, "--bootstrap", broker.bootstrap], input=stdin)


def listed(broker: Broker) -> dict[str, int]:
    result = run(broker, "topics", "list")
    assert result.exit_code == 0, result.output
    return {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines() if line}


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_create_list_and_describe(broker: Broker, unique: str) -> None:
    names = [f"orders-{unique}", f"payments-{unique}"]
    result = run(broker, "topics", "create", *names, "--partitions", "3", "--compact")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"created topic {n} (3 partitions, cleanup.policy=compact)" for n in names
    ]
    topics = listed(broker)
    assert topics[names[0]] == topics[names[1]] == 3

    sent = run(broker, "produce", names[0], stdin="a\t1\nb\t2\nc\t3\n")
    assert sent.exit_code == 0, sent.output
    described = run(broker, "topics", "describe", names[0], "--all-config")
    assert described.exit_code == 0, described.output
    lines = described.stdout.splitlines()
    assert lines[:2] == [f"topic       {names[0]}", "partitions  3"]
    assert "cleanup.policy=compact" in lines[2]
    assert lines[3] == "records     3"
    ends = [int(line.split()[2]) for line in lines[5:]]
    assert len(ends) == 3 and sum(ends) == 3


def test_an_existing_topic_is_refused_and_nothing_is_created(broker: Broker, unique: str) -> None:
    taken, fresh = f"taken-{unique}", f"fresh-{unique}"
    assert run(broker, "topics", "create", taken, "-p", "2").exit_code == 0
    error = one_line_error(run(broker, "topics", "create", fresh, taken, "--partitions", "2"))
    assert f"topic '{taken}' (2 partitions) already exists" in error
    assert "nothing created" in error
    assert fresh not in listed(broker)


def test_if_not_exists_leaves_existing_topics_and_creates_the_rest(
    broker: Broker, unique: str
) -> None:
    taken, fresh = f"kept-{unique}", f"new-{unique}"
    assert run(broker, "topics", "create", taken, "-p", "2").exit_code == 0
    result = run(broker, "topics", "create", taken, fresh, "-p", "3", "--if-not-exists")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"topic {taken} exists (2 partitions), left as it is",
        f"created topic {fresh} (3 partitions)",
    ]
    topics = listed(broker)
    assert topics[taken] == 2 and topics[fresh] == 3


@pytest.mark.parametrize("count", ["0", "-1"])
def test_a_partition_count_below_one_is_refused(broker: Broker, unique: str, count: str) -> None:
    error = one_line_error(run(broker, "topics", "create", f"z-{unique}", "--partitions", count))
    assert f"--partitions {count}: a topic needs at least 1 partition" in error
    assert f"z-{unique}" not in listed(broker)


def test_a_config_without_a_value_is_refused(broker: Broker, unique: str) -> None:
    result = run(broker, "topics", "create", f"c-{unique}", "-p", "1", "--config", "retention")
    assert "--config 'retention': expected KEY=VALUE" in one_line_error(result)
    assert f"c-{unique}" not in listed(broker)


def test_describing_a_missing_topic_does_not_create_it(broker: Broker, unique: str) -> None:
    error = one_line_error(run(broker, "topics", "describe", f"nothing-{unique}"))
    assert f"'nothing-{unique}'" in error and "do not exist" in error
    assert f"nothing-{unique}" not in listed(broker)


def test_no_broker_is_one_line() -> None:
    result = runner.invoke(app, ["topics", "list", "--bootstrap", "127.0.0.1:1"])
    assert "no Kafka broker answers at 127.0.0.1:1 (connection refused);" in one_line_error(result)
