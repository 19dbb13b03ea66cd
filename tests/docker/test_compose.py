"""The Docker files cannot run here (no Docker engine); check they say what users need."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "docker-compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def _listeners(value: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in value.split(","))


def test_kafka_runs_in_kraft_mode_from_the_official_image() -> None:
    kafka = _compose()["services"]["kafka"]
    assert re.fullmatch(r"apache/kafka:\d+\.\d+\.\d+", kafka["image"])
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    node_id = env["KAFKA_NODE_ID"]
    controller = _listeners(env["KAFKA_LISTENERS"])["CONTROLLER"]
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{node_id}@kafka{controller}"
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == 1


def test_host_clients_reach_kafka_on_localhost_9092() -> None:
    kafka = _compose()["services"]["kafka"]
    env = kafka["environment"]
    listeners, advertised = (
        _listeners(env["KAFKA_LISTENERS"]),
        _listeners(env["KAFKA_ADVERTISED_LISTENERS"]),
    )
    assert advertised["PLAINTEXT_HOST"] == "localhost:9092"
    assert listeners["PLAINTEXT_HOST"] == ":9092"
    assert "9092:9092" in kafka["ports"]
    # Every advertised listener is one the broker listens on, with a security protocol.
    protocols = _listeners(env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].replace(":", "://"))
    for name in advertised:
        assert name in listeners and name in protocols
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in advertised


def test_worker_connects_to_kafka_inside_the_compose_network() -> None:
    services = _compose()["services"]
    worker = services["worker"]
    assert worker["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert (
        COMPOSE.parent / worker["build"]["context"] / worker["build"]["dockerfile"]
    ).resolve() == DOCKERFILE
    command = worker["command"]
    assert command[:3] == ["streamjoin", "worker", "app:joins"]
    options = dict(zip(command[3::2], command[4::2], strict=True))
    internal = _listeners(services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"])[
        "PLAINTEXT"
    ]
    assert options["--bootstrap"] == internal == "kafka:19092"
    assert worker["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert (ROOT / "apps" / "ads").is_dir() and worker["working_dir"] == "/app/apps/ads"


def test_dockerfile_installs_the_package_and_runs_the_same_worker() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.1[1-9]", text, re.M)
    assert "RUN pip install ." in text
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    assert cmd is not None
    worker = _compose()["services"]["worker"]
    assert yaml.safe_load(cmd.group(1)) == worker["command"]
    workdirs = re.findall(r"^WORKDIR (\S+)$", text, re.M)
    assert workdirs[-1] == worker["working_dir"]


def test_the_worker_command_exists_with_the_options_compose_passes() -> None:
    from typer.testing import CliRunner

    from streamjoin.cli import app

    command = _compose()["services"]["worker"]["command"]
    result = CliRunner().invoke(app, [*command[1:2], "--help"])
    assert result.exit_code == 0, result.output
    for option in command[3::2]:
        assert option in result.output
