"""`streamjoin plan`: scenario files, what-if options, errors, and reading a live group."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from streamjoin.assignment.consumer.aiokafka_adapter import AiokafkaAssignor
from streamjoin.assignment.consumer.consumer_protocol import encode_assignment, encode_subscription
from streamjoin.assignment.model import Assignment, Subscription, TopicPartition
from streamjoin.broker import Broker, KafkaBroker
from streamjoin.cli import app
from streamjoin.cli.plan.live import group_scenario
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.topics import TopicSpec, ensure_topics

SCENARIO: dict[str, Any] = {
    "assignor": "sticky",
    "topics": {"t0": 8, "t1": 4},
    "members": {
        "m1": {"topics": ["t0", "t1"], "owned": [["t0", 0], ["t1", 2]], "generation": 3},
        "m2": {"topics": ["t0"]},
    },
}

runner = CliRunner()


def write(tmp_path: Path, scenario: Any) -> str:
    path = tmp_path / "scenario.json"
    path.write_text(scenario if isinstance(scenario, str) else json.dumps(scenario))
    return str(path)


def test_prints_members_and_summary(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", write(tmp_path, SCENARIO)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("assignor sticky    assign ")
    assert any(line.split()[:2] == ["m1", "6"] and "t1: 0-3" in line for line in lines)
    assert "valid" in lines
    assert "balance      min 6, max 6, spread 0 (balanced)" in lines
    assert "owned before 2 kept, 0 moved, 0 released; 10 newly assigned" in lines


def test_json_is_what_plan_returns(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", write(tmp_path, SCENARIO), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert set(printed) == {"assignor", "assignment", "assign_ms", "summary"}
    assert printed["summary"]["balance"]["spread"] == 0


def test_what_if_a_member_joins_and_another_leaves(tmp_path: Path) -> None:
    path = write(tmp_path, SCENARIO)
    result = runner.invoke(
        app, ["plan", path, "--json", "--join", "m3", "--leave", "m2", "--assignor", "fair"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["assignor"] == "fair"
    assert sorted(printed["assignment"]) == ["m1", "m3"]
    assert {topic for topic, _ in printed["assignment"]["m3"]} <= {"t0", "t1"}


def test_cooperative_sticky_lists_revocations_and_the_follow_up(tmp_path: Path) -> None:
    scenario = {
        "assignor": "cooperative-sticky",
        "topics": {"t": 4},
        "members": {"old": {"topics": ["t"], "owned": [["t", p] for p in range(4)]}},
    }
    result = runner.invoke(app, ["plan", write(tmp_path, scenario), "--join", "new"])
    assert result.exit_code == 0, result.output
    assert "  t-2: old -> new" in result.stdout
    assert "revoked now\n  old: t: 2-3\nfollow-up gives\n  new: t: 2-3" in result.stdout


@pytest.mark.parametrize(
    ("scenario", "args", "message"),
    [
        ({**SCENARIO, "assignor": "nope"}, [], "scenario: assignor: unknown assignor 'nope'"),
        (
            {**SCENARIO, "members": {"m": {"topics": ["t9"]}}},
            [],
            "scenario: members.m.topics[0]: topic 't9' is not in \"topics\"",
        ),
        (
            {**SCENARIO, "members": {"m": {"topics": ["t0"], "owned": [["t0", -3]]}}},
            [],
            "scenario: members.m.owned[0]: partition -3 is negative",
        ),
        ("{not json", [], "is not JSON: Expecting property name"),
        (SCENARIO, ["--leave", "m9"], "--leave m9: no such member (members: m1, m2)"),
        (SCENARIO, ["--join", "m1"], "--join m1: that member is already in the group"),
    ],
)
def test_a_wrong_file_is_one_line_and_exit_status_2(
    tmp_path: Path, scenario: Any, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["plan", write(tmp_path, scenario), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_needs_exactly_one_source(tmp_path: Path) -> None:
    for args in (["plan"], ["plan", write(tmp_path, SCENARIO), "--from-group", "g"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        assert "give either a SCENARIO.json file or --from-group" in result.stderr
    result = runner.invoke(app, ["plan", "--from-group", "g"])
    assert "--from-group needs --bootstrap HOST:PORT" in result.stderr
    result = runner.invoke(app, ["plan", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "cannot read scenario" in result.stderr


def test_an_unreachable_broker_is_one_line() -> None:
    result = runner.invoke(app, ["plan", "--from-group", "g", "--bootstrap", "127.0.0.1:1"])
    assert result.exit_code == 2
    assert "no Kafka broker answers at 127.0.0.1:1 (connection refused);" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def encoded_member(member_id: str, topics: tuple[str, ...], owned: list[tuple[str, int]]):
    subscription = encode_subscription(Subscription(topics, generation=4))
    assignment = encode_assignment(Assignment(tuple(TopicPartition(t, p) for t, p in owned)))
    return (member_id, "client", "/127.0.0.1", subscription, assignment)


def test_a_described_group_becomes_a_scenario() -> None:
    members = [
        encoded_member("a", ("t0", "t1"), [("t0", 0), ("t1", 0), ("gone", 0)]),
        encoded_member("b", ("t0", "new"), [("t0", 1)]),
    ]
    scenario = group_scenario(
        "g",
        state="Stable",
        protocol_type="consumer",
        protocol="sticky",
        members=members,
        topics={"t0": 2, "t1": 1},
    )
    assert scenario == {
        "assignor": "sticky",
        "topics": {"t0": 2, "t1": 1, "new": 0},
        "members": {
            "a": {"topics": ["t0", "t1"], "owned": [["t0", 0], ["t1", 0]], "generation": 4},
            "b": {"topics": ["new", "t0"], "owned": [["t0", 1]], "generation": 4},
        },
    }


@pytest.mark.parametrize(
    ("state", "protocol_type", "members", "message"),
    [
        ("Empty", "consumer", [], "group 'g' has no members (state 'Empty')"),
        ("Stable", "connect", [("a", "c", "h", b"x", b"")], "is not a consumer group"),
        ("PreparingRebalance", "consumer", [("a", "c", "h", b"", b"")], "is rebalancing"),
        ("Stable", "consumer", [("a", "c", "h", b"", b"")], "without its members' subscriptions"),
        ("Stable", "consumer", [("a", "c", "h", b"\x00", b"")], "member 'a' of group 'g'"),
    ],
)
def test_groups_that_cannot_be_planned_are_explained(
    state, protocol_type, members, message
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        group_scenario(
            "g",
            state=state,
            protocol_type=protocol_type,
            protocol="range",
            members=members,
            topics={},
        )


async def run_cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "streamjoin",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _sticky_member(bootstrap: str, topic: str, group: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[AiokafkaAssignor("sticky")],
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        rebalance_timeout_ms=6000,
    )


@pytest.mark.broker
async def test_from_group_on_the_embedded_broker_says_what_is_missing(
    tansu_broker: Broker, unique: str
) -> None:
    """Tansu describes groups but leaves members' metadata empty: the command must say so."""
    broker = tansu_broker
    topic, group = f"plan-{unique}", f"plan-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 4)])
    consumer = _sticky_member(broker.bootstrap, topic, group)
    await consumer.start()  # returns once the group is Stable with this member
    try:
        code, _, err = await run_cli("plan", "--from-group", group, "--bootstrap", broker.bootstrap)
        assert code == 2
        assert "without its members' subscriptions and assignments" in err
        assert len(err.strip().splitlines()) == 1
        code, _, err = await run_cli(
            "plan", "--from-group", f"nobody-{unique}", "--bootstrap", broker.bootstrap
        )
        assert code == 2
        assert f"group 'nobody-{unique}' has no members" in err
    finally:
        await consumer.stop()


@pytest.mark.broker
async def test_from_group_on_apache_kafka_plans_the_live_group(broker: Broker, unique: str) -> None:
    """Apache Kafka reports members' subscriptions and assignments: the live group is planned."""
    if not isinstance(broker, KafkaBroker):
        pytest.skip(
            "Tansu reports no member metadata (the test above); STREAMJOIN_TEST_BROKER=kafka"
        )
    topic, group = f"plan-{unique}", f"plan-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 4)])
    consumer = _sticky_member(broker.bootstrap, topic, group)
    await consumer.start()
    try:
        code, out, err = await run_cli(
            "plan", "--from-group", group, "--bootstrap", broker.bootstrap
        )
        assert (code, err) == (0, ""), err
        assert f"{topic}: 0-3" in out  # the member's current assignment, as the broker told
        assert "4 kept, 0 moved" in out  # planned from that assignment
    finally:
        await consumer.stop()
