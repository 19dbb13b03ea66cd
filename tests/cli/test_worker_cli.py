"""`streamjoin worker` as a user starts it: --create-topics, and one-line errors for settings
that cannot work, given before anything touches Kafka."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamjoin.broker import Broker
from streamjoin.cli.worker.processes import parse_processes

APP = """
import streamjoin
from streamjoin import JoinWindows

joins = streamjoin.App("{app_id}")
orders = joins.topic("orders-{suffix}", partitions=3)
payments = joins.topic("payments-{suffix}")


@joins.join(orders, payments, window=JoinWindows(before=0, after=60_000), into="paid-{suffix}")
def paid(order, payment):
    return {{"order": order, "payment": payment}}
"""


def write_app(directory: Path, suffix: str) -> Path:
    (directory / "app.py").write_text(APP.format(app_id=f"w-{suffix}", suffix=suffix))
    return directory


def worker(app_dir: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "streamjoin",
        "worker",
        "app:joins",
        "--app-dir",
        str(app_dir),
        "--state-dir",
        str(app_dir / "state"),
        *args,
    ]


def refused(command: list[str]) -> str:
    """Run a worker that must refuse: exit status 2, one error line, no traceback."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    assert "Traceback" not in done.stderr and "Unclosed" not in done.stderr, done.stderr
    return errors[0]


def topic_counts(broker: Broker) -> dict[str, int]:
    listed = subprocess.run(
        [sys.executable, "-m", "streamjoin", "topics", "list", "-b", broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return {line.split()[0]: int(line.split()[1]) for line in listed.stdout.splitlines()}


@pytest.mark.broker
def test_missing_inputs_are_refused_with_the_command_that_creates_them(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    error = refused(worker(write_app(tmp_path, unique), "--bootstrap", broker.bootstrap))
    assert f"`streamjoin topics create orders-{unique} --partitions 3`" in error
    assert f"`streamjoin topics create payments-{unique} --partitions 3`" in error
    assert "--create-topics" in error
    assert f"orders-{unique}" not in topic_counts(broker)


@pytest.mark.broker
@pytest.mark.slow
def test_create_topics_creates_the_inputs_with_the_declared_partitions(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    command = worker(
        write_app(tmp_path, unique), "--bootstrap", broker.bootstrap, "--create-topics"
    )
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        wanted = {f"orders-{unique}": 3, f"payments-{unique}": 3, f"paid-{unique}": 3}
        while time.monotonic() < deadline and process.poll() is None:
            counts = topic_counts(broker)
            if all(counts.get(name) == n for name, n in wanted.items()):
                break
            time.sleep(0.5)
        assert process.poll() is None, log.read_text()
        assert {name: topic_counts(broker).get(name) for name in wanted} == wanted
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()
    assert "created input topic" in log.read_text()


def test_no_broker_is_one_line(tmp_path: Path) -> None:
    error = refused(worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1"))
    assert error == (
        "error: no Kafka broker answers at 127.0.0.1:1 (connection refused); check the address "
        "(--bootstrap), "
        "or start the embedded one with `streamjoin broker`"
    )


def test_processes_that_refuse_end_their_supervisor_with_one_line(tmp_path: Path) -> None:
    error = refused(
        worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1", "--processes", "2")
    )
    first = error.removeprefix("error: process 0").removeprefix("error: process 1")
    assert first == (
        " refused to run: exit status 2: error: no Kafka broker answers at 127.0.0.1:1 "
        "(connection refused); check the address (--bootstrap), or start the embedded one "
        "with `streamjoin broker`"
    )


@pytest.mark.parametrize("value", ["0", "many", "-1"])
def test_a_process_count_that_is_not_one_or_more_is_refused(tmp_path: Path, value: str) -> None:
    error = refused(worker(write_app(tmp_path, "x"), "--processes", value))
    assert error == f"error: --processes {value}: give a number of processes (1 or more) or auto"


def test_a_metrics_port_in_use_is_refused_before_kafka(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # An unreachable broker: the port must be what the worker complains about.
        error = refused(
            worker(
                write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1", "--metrics-port", str(port)
            )
        )
    assert error == f"error: --metrics-port {port}: the port is already in use; pick another one"


def test_a_metrics_host_not_of_this_machine_is_refused_before_kafka(tmp_path: Path) -> None:
    command = worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1")
    error = refused([*command, "--metrics-port", "9", "--metrics-host", "192.0.2.1"])
    assert error.startswith("error: --metrics-host 192.0.2.1: cannot listen on 192.0.2.1:9 (")


def test_an_advertised_metrics_url_that_cannot_work_is_refused_before_kafka(
    tmp_path: Path,
) -> None:
    command = worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1")
    alone = refused([*command, "--advertised-metrics-url", "http://h:1"])
    assert alone == "error: --advertised-metrics-url needs --metrics-port (no endpoint)"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    bare = refused([*command, "--metrics-port", port, "--advertised-metrics-url", "h:1"])
    assert bare == "error: --advertised-metrics-url 'h:1': give a URL, http://host:port"


def test_query_options_that_cannot_work_are_refused_before_kafka(tmp_path: Path) -> None:
    app = write_app(tmp_path, "x")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        error = refused(worker(app, "--bootstrap", "127.0.0.1:1", "--query-port", str(port)))
    assert error == f"error: --query-port {port}: the port is already in use; pick another one"
    url = ("--advertised-query-url", "http://host-a:8081")
    error = refused(worker(app, "--bootstrap", "127.0.0.1:1", *url))
    assert error == "error: --advertised-query-url needs --query-port (no queries)"
    error = refused(
        worker(app, "--bootstrap", "127.0.0.1:1", "--query-port", "0", url[0], "host-a:8081")
    )
    assert error == "error: --advertised-query-url 'host-a:8081': give a URL, http://host:port"


def test_a_state_dir_under_a_file_is_refused_before_kafka(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    command = worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1")
    command[command.index("--state-dir") + 1] = str(tmp_path / "afile" / "state")
    error = refused(command)
    assert error == (
        f"error: --state-dir {tmp_path / 'afile' / 'state'}: {tmp_path / 'afile'} is a file, "
        "not a directory"
    )


def test_an_unknown_on_error_choice_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        worker(write_app(tmp_path, "x"), "--on-error", "ignore"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Invalid value for '--on-error'" in done.stderr
    assert "'ignore' is not one of 'dlq', 'fail'." in done.stderr


def test_a_negative_setting_is_refused_before_kafka(tmp_path: Path) -> None:
    error = refused(
        worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1", "--max-task-idle-ms", "-5")
    )
    assert error == "error: --max-task-idle-ms -5: cannot be negative"


@pytest.mark.broker
def test_auto_offset_reset_none_stops_a_fresh_group_in_one_line(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    app_dir = write_app(tmp_path, unique)
    command = worker(app_dir, "--bootstrap", broker.bootstrap, "--create-topics")
    error = refused([*command, "--auto-offset-reset", "none"])
    assert "has no committed offset and auto_offset_reset is none" in error, error


def test_an_unknown_processing_guarantee_is_refused_before_kafka(tmp_path: Path) -> None:
    command = worker(write_app(tmp_path, "x"), "--processing-guarantee", "exactly_twice")
    error = refused([*command, "--bootstrap", "127.0.0.1:1"])
    assert "processing guarantee 'exactly_twice': use at_least_once or exactly_once" in error


@pytest.mark.broker
def test_exactly_once_on_a_broker_without_transactions_is_one_line(
    tansu_broker: Broker, unique: str, tmp_path: Path
) -> None:
    """Tansu has no transactions: the worker says so, and that at_least_once works there."""
    command = worker(
        write_app(tmp_path, unique),
        "--bootstrap",
        tansu_broker.bootstrap,
        "--create-topics",
        "--processing-guarantee",
        "exactly_once",
    )
    error = refused(command)
    assert "does not support transactions" in error
    assert "at_least_once works on it" in error


def test_auto_processes_are_the_cores_this_process_may_run_on() -> None:
    assert parse_processes("auto") == len(os.sched_getaffinity(0))
    assert parse_processes("3") == 3


def test_processes_cannot_share_one_query_port(tmp_path: Path) -> None:
    command = worker(write_app(tmp_path, "x"), "--bootstrap", "127.0.0.1:1", "--processes", "2")
    error = refused([*command, "--query-port", "8081"])
    assert "the processes of a host cannot share one query port" in error


def test_a_negative_drain_timeout_is_one_line(tmp_path: Path) -> None:
    error = refused(worker(write_app(tmp_path, "x"), "--drain-timeout", "-1"))
    assert error == "error: --drain-timeout -1.0: cannot be negative (0: leave at once)"
