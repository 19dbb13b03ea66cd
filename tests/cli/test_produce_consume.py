"""`streamjoin produce` and `streamjoin consume` against the embedded broker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiokafka import ConsumerRecord
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from streamjoin.broker import Broker
from streamjoin.cli import app
from streamjoin.cli.consume import Format, render
from streamjoin.cli.produce import LineRecord, parse_lines
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.partitioning import partition_for_key

runner = CliRunner()


def run(broker: Broker, *args: str, stdin: str | None = None) -> Result:
    return runner.invoke(app, [*args, "--bootstrap", broker.bootstrap], input=stdin)


def topic(broker: Broker, name: str, partitions: int = 4) -> str:
    assert run(broker, "topics", "create", name, "-p", str(partitions)).exit_code == 0
    return name


def consumed(broker: Broker, name: str, *args: str) -> list[dict[str, Any]]:
    result = run(broker, "consume", name, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.broker
def test_key_tab_value_lines_round_trip(broker: Broker, unique: str) -> None:
    name = topic(broker, f"kv-{unique}")
    lines = [f'user-{i}\t{{"n": {i}}}' for i in range(10)]
    sent = run(broker, "produce", name, stdin="\n".join(lines) + "\n")
    assert sent.exit_code == 0, sent.output
    assert sent.stdout.startswith(f"sent 10 records to {name} (by partition ")
    records = consumed(broker, name, "--from-beginning", "--max", "10")
    assert sorted((r["key"], r["value"]) for r in records) == sorted(
        (f"user-{i}", f'{{"n": {i}}}') for i in range(10)
    )
    for record in records:
        # Keys go where Kafka's default partitioner (and so a streamjoin task) expects them.
        assert record["partition"] == partition_for_key(record["key"].encode(), 4)
        assert record["topic"] == name and record["headers"] == {}


@pytest.mark.broker
def test_json_values_with_key_and_timestamp_fields(broker: Broker, unique: str) -> None:
    name = topic(broker, f"json-{unique}", partitions=2)
    values = [{"order_id": f"o{i}", "ts": 1_700_000_000_000 + i} for i in range(3)]
    stdin = "".join(json.dumps(v) + "\n" for v in values)
    sent = run(
        broker, "produce", name, "--key-field", "order_id", "--timestamp-field", "ts", stdin=stdin
    )
    assert sent.exit_code == 0, sent.output
    records = consumed(broker, name, "--from-beginning", "--max", "3")
    assert sorted((r["key"], r["timestamp"], json.loads(r["value"])) for r in records) == [
        (v["order_id"], v["ts"], v) for v in values
    ]
    text = run(broker, "consume", name, "--from-beginning", "--max", "1")
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("partition=")
    assert " offset=0 timestamp=2023-11-14T22:13:20.00" in text.stdout
    assert " key=o" in text.stdout and ' value={"order_id"' in text.stdout


@pytest.mark.broker
def test_a_line_that_is_not_json_sends_nothing(broker: Broker, unique: str) -> None:
    name = topic(broker, f"bad-{unique}", partitions=1)
    stdin = '{"id": "a"}\nnot json\n{"id": "b"}\n'
    error = one_line_error(run(broker, "produce", name, "--key-field", "id", stdin=stdin))
    assert "line 2: value is not JSON" in error and "nothing was sent" in error
    assert consumed(broker, name, "--from-beginning", "--timeout", "1") == []


@pytest.mark.broker
def test_producing_to_a_missing_topic_does_not_create_it(broker: Broker, unique: str) -> None:
    error = one_line_error(run(broker, "produce", f"nowhere-{unique}", stdin="k\tv\n"))
    assert f"topic 'nowhere-{unique}' does not exist" in error
    assert "streamjoin topics create" in error
    listed = run(broker, "topics", "list")
    assert f"nowhere-{unique}" not in listed.stdout


@pytest.mark.broker
def test_consume_starts_at_the_end_unless_told_otherwise(broker: Broker, unique: str) -> None:
    name = topic(broker, f"end-{unique}", partitions=2)
    assert run(broker, "produce", name, stdin="a\t1\nb\t2\nc\t3\n").exit_code == 0
    assert consumed(broker, name, "--timeout", "1") == []
    assert len(consumed(broker, name, "--from-beginning", "--timeout", "1")) == 3


def test_bad_lines_name_the_line_and_the_problem() -> None:
    cases = {
        ("no tab here", None, None): "line 1: no TAB between key and value",
        ('{"k": 1}', "id", None): "line 1: no field 'id' for the key",
        ("[1, 2]", "id", None): "line 1: value is JSON list, not an object",
        ('k\t{"ts": "soon"}', None, "ts"): "line 1: field 'ts' is 'soon', not a timestamp",
    }
    for (line, key_field, timestamp_field), message in cases.items():
        with pytest.raises(ConfigurationError, match=message):
            parse_lines([line], key_field, timestamp_field)


def test_json_keys_that_are_not_strings_are_their_json_text() -> None:
    assert parse_lines(['{"id": 7}', "", '{"id": {"a": 1}}'], "id") == [
        LineRecord(b"7", b'{"id": 7}', None),
        LineRecord(b'{"a":1}', b'{"id": {"a": 1}}', None),
    ]


no_separators = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1).filter(
    lambda s: not any(c in s for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
)


@given(key=no_separators.filter(lambda s: s.strip()), value=no_separators | st.just(""))
def test_key_tab_value_splits_at_the_first_tab(key: str, value: str) -> None:
    line = f"{key}\t{value}\tmore"
    assert parse_lines([line]) == [LineRecord(key.encode(), f"{value}\tmore".encode(), None)]


def test_each_record_is_one_line_whatever_its_bytes() -> None:
    record = ConsumerRecord(
        topic="t",
        partition=1,
        offset=7,
        timestamp=1_700_000_000_000,
        timestamp_type=0,
        key=b"k\n1",
        value=b'{"a":\n"b"}\xff',
        checksum=None,
        serialized_key_size=3,
        serialized_value_size=10,
        headers=[("h", b"x\ny")],
    )
    assert render(record, Format.text) == (
        "partition=1 offset=7 timestamp=2023-11-14T22:13:20.000Z key=k\\n1 headers=h=x\\ny "
        'value={"a":\\n"b"}\\xff'
    )
    assert json.loads(render(record, Format.json)) == {
        "topic": "t",
        "partition": 1,
        "offset": 7,
        "timestamp": 1_700_000_000_000,
        "key": "k\n1",
        "value": '{"a":\n"b"}\\xff',
        "headers": {"h": "x\ny"},
    }
