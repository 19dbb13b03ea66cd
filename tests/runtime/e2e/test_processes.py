"""`streamjoin worker --processes 2`: one supervisor, two worker processes of one host sharing
its state directory and process id, on a real broker."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import worker_processes as processes
from child_processes import alive, children

from streamjoin.broker import Broker, KafkaBroker
from streamjoin.broker.base import free_port

pytestmark = [pytest.mark.broker, pytest.mark.slow]

Workers, produce, read_joined = processes.Workers, processes.produce, processes.read_joined
WORKERS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "workers.md"


def readme_options(port: int) -> list[str]:
    """The options of docs/workers.md's `--processes` command, on another metrics port."""
    line = next(
        line
        for line in WORKERS_PAGE.read_text().splitlines()
        if line.startswith("streamjoin worker app:joins --processes")
    )
    options = line.split()[3:]
    assert options == ["--processes", "2", "--metrics-port", "9100"]
    return [*options[:-1], str(port)]


async def until(condition: Callable[[], bool], within_s: float, what: str) -> None:
    for _ in range(int(within_s / 0.2)):
        if condition():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {within_s} s: {what}")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def _status_tasks(port: int) -> dict[int, int]:
    """Active tasks per process, as the host's /status says."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as response:
        members = json.loads(response.read())["members"]
    return {m["index"]: sum(t["role"] == "active" for t in m["tasks"].values()) for m in members}


def active_tasks(text: str) -> dict[str, int]:
    found = re.findall(r'streamjoin_active_tasks\{process="(\d+)",[^}]*\} (\d+)', text)
    return {process: int(count) for process, count in found}


async def test_two_processes_of_a_host_share_its_tasks_and_stop_with_the_supervisor(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    port = free_port("127.0.0.1")
    workers.start("host", *readme_options(port))
    supervisor = workers.processes["host"].pid
    try:
        await until(lambda: len(children(supervisor)) == 2, 30, "two worker processes")
        pids = children(supervisor)
        await produce(broker.bootstrap, unique, range(2_000), pace_s=0)
        seen = await read_joined(broker.bootstrap, unique, 2_000, within_s=60)
        assert len(seen) == 2_000, workers.logs()
        await until(
            lambda: active_tasks(scrape(port)) == {"0": 2, "1": 2}, 30, "2 tasks per process"
        )
        assert 'streamjoin_process_restarts_total{process="1"} 0.0' in scrape(port)
        # One /status for the host: both processes, each with its two tasks.
        await until(lambda: _status_tasks(port) == {0: 2, 1: 2}, 10, "both processes' status")
        if isinstance(broker, KafkaBroker):  # Tansu describes groups without their metadata
            command = ["plan", "--tasks", "--from-group", f"e2e-{unique}"]
            plan = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "streamjoin", *command, "--bootstrap", broker.bootstrap],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert plan.returncode == 0, plan.stderr
            rows = [line.split()[:4] for line in plan.stdout.splitlines()]
            process_id = (tmp_path / "state-host" / f"e2e-{unique}" / "process.id").read_text()
            assert [process_id.strip(), "2", "4"] in [row[:3] for row in rows], plan.stdout
            assert sum(row[:1] == ["member"] and row[2:4] == ["1", "2"] for row in rows) == 2
            status = await asyncio.to_thread(
                subprocess.run,
                [
                    sys.executable,
                    "-m",
                    "streamjoin",
                    "status",
                    "--group",
                    f"e2e-{unique}",
                    "--bootstrap",
                    broker.bootstrap,
                    "--format",
                    "json",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            members = json.loads(status.stdout)["members"]
            assert {(m["processes"], m["answered"], m["status_url"]) for m in members} == {
                (2, True, f"http://127.0.0.1:{port}")
            }, status.stdout
    finally:
        codes = workers.stop_all()
    assert codes == {"host": 0}, workers.logs()
    assert not any(alive(pid) for pid in pids)
    log = (tmp_path / "host.log").read_text()
    assert "[0] " in log and "[1] " in log


async def test_a_task_moving_between_processes_of_a_host_restores_nothing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """One process stops (SIGTERM: it commits and closes its tasks); the other takes its tasks
    over from the shared state directory, then hands them back to its restarted sibling:
    every reopening restores 0 changelog records."""
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    port = free_port("127.0.0.1")
    # A batch produced at once: wait for an input that has nothing fetched yet rather than
    # run ahead of it (its records would then be late: what this test checks is the hand-over).
    idle = ["--max-task-idle-ms", "5000"]
    workers.start("host", "--processes", "2", "--metrics-port", str(port), *idle)
    supervisor = workers.processes["host"].pid
    log = tmp_path / "host.log"
    try:
        await until(lambda: len(children(supervisor)) == 2, 30, "two worker processes")
        await produce(broker.bootstrap, unique, range(1_000), pace_s=0)
        assert len(await read_joined(broker.bootstrap, unique, 1_000, within_s=60)) == 1_000
        before = log.read_text().count(" restored ")
        child = min(children(supervisor))
        os.kill(child, signal.SIGTERM)
        await until(lambda: "restarting in" in log.read_text(), 30, "the supervisor restarts it")
        # Later than every click so far (auction a's click is at most 30 s after a x 100 ms):
        # nothing of this batch arrives after its window has closed.
        later = range(1_300, 2_300)
        await produce(broker.bootstrap, unique, later, pace_s=0)
        seen = await read_joined(broker.bootstrap, unique, 2_000, within_s=60)
        missing = sorted({*range(1_000), *later} - seen.keys())
        late = [line for line in scrape(port).splitlines() if "late" in line or "dead" in line]
        assert not missing, f"missing {missing[:40]}... {late}\n{workers.logs()}"
        await until(
            lambda: log.read_text().count(" restored ") >= before + 4,
            60,
            "the tasks moved over and back",
        )
    finally:
        codes = workers.stop_all()
    assert codes == {"host": 0}, workers.logs()
    text = log.read_text()
    restores = [int(n) for n in re.findall(r"task \S+ restored (\d+) records", text)]
    assert len(restores) >= 8 and set(restores) == {0}, text


async def test_a_killed_process_is_replaced_and_no_joined_record_is_missing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("host", "--processes", "2")
    supervisor = workers.processes["host"].pid
    try:
        await until(lambda: len(children(supervisor)) == 2, 30, "two worker processes")
        producing = asyncio.create_task(produce(broker.bootstrap, unique, range(3_000), pace_s=0.1))
        await asyncio.sleep(4)
        killed = min(children(supervisor))
        os.kill(killed, signal.SIGKILL)
        await until(lambda: len(children(supervisor) - {killed}) == 2, 30, "a replacement process")
        await producing
        seen = await read_joined(broker.bootstrap, unique, 3_000, within_s=90)
    finally:
        codes = workers.stop_all()
    missing = sorted(set(range(3_000)) - seen.keys())
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"
    assert codes == {"host": 0}, workers.logs()
    assert "killed by SIGKILL" in (tmp_path / "host.log").read_text()


async def test_the_processes_stop_when_the_supervisor_is_killed(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("host", "--processes", "2")
    supervisor = workers.processes["host"].pid
    try:
        await until(lambda: len(children(supervisor)) == 2, 30, "two worker processes")
        pids = children(supervisor)
        workers.signal("host", signal.SIGKILL)
        await until(lambda: not any(alive(pid) for pid in pids), 30, "the children exit")
    finally:
        workers.stop_all()
