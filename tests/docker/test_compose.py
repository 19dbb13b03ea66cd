"""The Docker files say what users need, checked without an engine (`make docker-e2e`, with
docker/e2e.py, runs them for real where one can be started)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from typer._click.exceptions import UsageError  # typer's own click raises its own
from typer.core import TyperGroup
from typer.main import get_command

from streamjoin.broker.kafka_jars import kafka_version
from streamjoin.cli import app
from streamjoin.dsl.settings import AppSettings

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
    # The release the suite tests against (`streamjoin broker --kafka`), not another one.
    assert kafka["image"] == f"apache/kafka:{kafka_version()}"
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
    # At the versions `make` installs: the dependencies, then the package itself.
    assert "pip install -c constraints.txt -r requirements.txt" in text
    assert "RUN pip install --no-deps --no-build-isolation -c constraints.txt ." in text
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    assert cmd is not None
    worker = _compose()["services"]["worker"]
    assert yaml.safe_load(cmd.group(1)) == worker["command"]
    workdirs = re.findall(r"^WORKDIR (\S+)$", text, re.M)
    assert workdirs[-1] == worker["working_dir"]


def test_the_worker_command_exists_with_the_options_compose_passes() -> None:
    from typer.testing import CliRunner

    command = _compose()["services"]["worker"]["command"]
    result = CliRunner().invoke(app, [*command[1:2], "--help"])
    assert result.exit_code == 0, result.output
    for option in command[3::2]:
        assert option in result.output


def _demo() -> ModuleType:
    """apps/ads/demo.py as a module (it puts apps/ads on the path for its own imports)."""
    spec = importlib.util.spec_from_file_location("ads_demo", ROOT / "apps" / "ads" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parses(args: list[str]) -> None:
    """Parse a `streamjoin ...` command line as the CLI would (options, choices, arguments)
    without running it; raises a UsageError if it is not a valid command line."""
    command = get_command(app)
    path = ["streamjoin"]
    while args and isinstance(command, TyperGroup) and args[0] in command.commands:
        path.append(args[0])
        command = command.commands[args[0]]
        args = args[1:]
    assert not isinstance(command, TyperGroup), f"no such command: {' '.join(path + args)}"
    command.make_context(" ".join(path), list(args))


def test_every_service_runs_a_real_command_line() -> None:
    services = _compose()["services"]
    assert {"kafka", "topics", "traffic", "worker"} <= set(services)
    for name, service in services.items():
        if name == "kafka":
            continue
        command = service["command"]
        if command[0] == "streamjoin":
            _parses(command[1:])
        else:
            assert command[0] == "python", name
            script = ROOT / "apps" / "ads" / command[1]
            assert service["working_dir"] == "/app/apps/ads" and script.is_file(), name
            _demo().arguments().parse_args(command[2:])
    with pytest.raises(UsageError, match="No such option: --partition"):
        _parses(["topics", "create", "x", "--partition", "8"])


def test_topics_are_created_before_workers_and_traffic_start() -> None:
    services = _compose()["services"]
    demo = _demo()
    command = services["topics"]["command"]
    assert command[:3] == ["streamjoin", "topics", "create"]
    options = command.index("--partitions")
    assert set(command[3 : command.index("--partitions")]) == {demo.IMPRESSIONS, demo.CLICKS}
    assert int(command[options + 1]) == demo.PARTITIONS
    # `up` a second time finds the topics there: that must not fail the one-shot service.
    assert "--if-not-exists" in command
    assert services["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    for name in ("worker", "traffic"):
        depends = services[name]["depends_on"]["topics"]
        assert depends["condition"] == "service_completed_successfully", name
    traffic = services["traffic"]["command"]
    assert "--traffic-only" in traffic
    assert traffic[traffic.index("--bootstrap") + 1] == "kafka:19092"


def test_the_image_builds_the_package_as_make_does() -> None:
    text = DOCKERFILE.read_text()
    copies = re.findall(r"^COPY (.+) (\S+)$", text, re.M)
    sources = [source for line, _ in copies for source in line.split()]
    for source in sources:
        assert (ROOT / source).exists(), source
    # setup.py, pyproject.toml and the package come in before the install, and the
    # dependencies with setuptools (the build's requirement a pure build needs) before them.
    install = text.index("RUN pip install --no-deps --no-build-isolation -c constraints.txt .")
    for needed in ("setup.py", "pyproject.toml", "constraints.txt", "streamjoin"):
        assert needed in sources and text.index(needed) < install, needed
    assert 'p["project"]["dependencies"]' in text and 'p["build-system"]["requires"]' in text
    assert text.index("pip install -c constraints.txt -r requirements.txt") < install
    # Pure Python, saying why (the compile took 4 of a fresh docker-e2e's minutes): no compiler.
    assert re.search(r"^\s+STREAMJOIN_COMPILE=0$", text, re.M)
    assert "apt-get" not in text and "mypyc" in text
    # One image: the worker builds it, the one-shot services run it as built.
    services = _compose()["services"]
    assert services["worker"]["build"]["dockerfile"] == "docker/Dockerfile"
    for service in ("topics", "traffic"):
        assert "build" not in services[service], service
        assert services[service]["image"] == services["worker"]["image"], service
        assert services[service]["pull_policy"] == "never", service


def test_a_stopping_worker_gets_longer_than_its_own_bound_on_a_stop() -> None:
    """Killed before its final commit, a worker leaves its output since the last commit to be
    repeated (a scale-in past Compose's 30 s once did: 155 duplicates). Its stop waits for the
    broker up to the app's broker-unavailable timeout, then ends without the commit."""
    worker = _compose()["services"]["worker"]
    grace = re.fullmatch(r"(\d+)s", worker["stop_grace_period"])
    assert grace is not None and worker["stop_signal"] == "SIGTERM"
    assert int(grace[1]) > AppSettings().broker_unavailable_timeout_s + 10
