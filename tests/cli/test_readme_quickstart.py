"""The README.md's "Quick start for your own app", run command by command as written there, on a
fresh embedded broker, and docs/security.md's commands on Apache Kafka with TLS and SASL: the
pages cannot drift from what works.

The only change: port 9092 becomes a free port, so the test can run next to anything else
(where a command relies on the default localhost:9092, STREAMJOIN_BOOTSTRAP says the port).
`streamjoin broker` and `streamjoin worker` run until Ctrl-C (as the pages say), so they run
in the background; every other command must succeed in turn.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: docs_text
from docs_text import blocks, page, section  # noqa: E402

LONG_RUNNING = ("streamjoin broker", "streamjoin worker")


def quick_start() -> str:
    return section("README.md", "Quick start for your own app")


def commands(section: str) -> list[str]:
    lines = [line for block in blocks(section, "bash") for line in block.splitlines()]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"the broker did not listen on {port}")


def masked(output: str) -> list[str]:
    """Output lines with the timestamp (the time the records were sent) masked, sorted."""
    return sorted(re.sub(r"timestamp=\S+", "timestamp=T", line) for line in output.splitlines())


def run_steps(
    steps: list[str],
    cwd: Path,
    env: dict[str, str],
    ready: Callable[[subprocess.Popen[bytes]], None],
) -> str:
    """Run `steps` in bash as a user would, the long-running ones in the background (`ready`
    waits for the broker); every other step must succeed. Returns the last one's output."""
    background: list[subprocess.Popen[bytes]] = []
    output = ""
    try:
        for step in steps:
            if step.startswith(LONG_RUNNING):
                log = open(cwd / f"{step.split()[1]}.log", "wb")  # noqa: SIM115
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", f"exec {step}"],
                        cwd=cwd,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
                if step.startswith("streamjoin broker"):
                    ready(background[-1])
                continue
            done = subprocess.run(
                ["bash", "-c", step],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            logs = "".join(p.read_text() for p in cwd.glob("*.log"))
            assert done.returncode == 0, f"{step}\n{done.stdout}{done.stderr}\n{logs}"
            output = done.stdout
    finally:
        for process in reversed(background):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    return output


def test_the_quick_start_commands_work_as_written(tmp_path: Path) -> None:
    section = quick_start()
    (app,) = blocks(section, "python")
    assert app.startswith("# app.py\n")
    port = str(free_port())
    (tmp_path / "app.py").write_text(app.replace("9092", port))
    steps = [command.replace("9092", port) for command in commands(section)]
    assert [s.split()[:2] for s in steps if s.startswith(LONG_RUNNING)] == [
        ["streamjoin", "broker"],
        ["streamjoin", "worker"],
    ]
    env = {**os.environ, "STREAMJOIN_BOOTSTRAP": f"localhost:{port}"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    output = run_steps(steps, tmp_path, env, ready=lambda broker: wait_for_port(int(port), broker))
    (shown,) = blocks(section, "text")
    assert masked(output) == masked(shown)


def consecutive_free_ports(count: int) -> int:
    """A port P with P..P+count-1 free (the secured broker's listeners take the next ones)."""
    while True:
        first = free_port()
        if first + count < 65536 and all(_free(first + i) for i in range(1, count)):
            return first


def _free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def wait_for_clients(broker: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    """Wait until the broker has printed its secured listeners' client settings (it is ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and broker.poll() is None:
        if log.exists() and log.read_text().count("client settings:") == 2:
            return
        time.sleep(0.5)
    raise AssertionError(f"the secured broker did not start:\n{log.read_text()}")


@pytest.mark.timeout(600)
def test_the_secured_cluster_commands_work_as_written(tmp_path: Path) -> None:
    section = page("docs/security.md")
    (app,) = blocks(quick_start(), "python")
    (tmp_path / "app.py").write_text(app)
    (properties,) = blocks(section, "properties")
    (tmp_path / "client.properties").write_text(properties)
    first = consecutive_free_ports(3)
    ports = {f"909{2 + i}": str(first + i) for i in range(3)}
    steps = [re.sub(r"909[234]", lambda m: ports[m.group()], c) for c in commands(section)]
    assert [s.split()[:3] for s in steps if s.startswith(LONG_RUNNING)] == [
        ["streamjoin", "broker", "--kafka"],
        ["streamjoin", "worker", "app:shop"],
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJOIN_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    output = run_steps(
        steps, tmp_path, env, ready=lambda broker: wait_for_clients(broker, tmp_path / "broker.log")
    )
    record = json.loads(output)
    assert record["key"] == "o-1"
    assert json.loads(record["value"]) == {"order": "o-1", "amount": 30, "paid_by": "card"}
    assert "alice-secret" not in (tmp_path / "worker.log").read_text()


def test_the_secured_app_example_builds_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    (example,) = blocks(page("docs/security.md"), "python")
    monkeypatch.setenv("SHOP_KAFKA_PASSWORD", "from-the-environment")
    import streamjoin

    scope: dict[str, object] = {"os": os, "streamjoin": streamjoin}
    exec(example, scope)
    security = scope["shop"].settings.security  # type: ignore[attr-defined]
    assert security.describe() == "SASL_SSL, SCRAM-SHA-512 as shop, CA /etc/kafka/ca.pem"
    assert security.sasl_password == "from-the-environment"
