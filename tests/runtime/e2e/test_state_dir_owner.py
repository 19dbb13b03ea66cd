"""One worker per state directory (issue 35, item 7): a second `streamjoin worker` given the
--state-dir of a running one is refused at once with one line naming that worker; the
processes of one host share a directory only under `--processes`, where each keeps a copy of
its own of a global table."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest
import worker_processes as processes
from geo_app import TOPICS as GEO_TOPICS

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def suffixed(topics: tuple[str, ...], suffix: str) -> list[TopicSpec]:
    return [TopicSpec(t.rsplit("-", 1)[0] + f"-{suffix}", 2) for t in topics]


async def test_a_second_worker_on_a_state_dir_is_told_which_worker_has_it(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await processes.make_topics(broker.bootstrap, unique)
    workers = processes.Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    try:
        await workers.wait_for_log("w1", "is running", within_s=60)
        workers.start("w2", state="w1")
        try:
            code = workers.processes["w2"].wait(60)
        except processes.subprocess.TimeoutExpired:
            code = None
        assert workers.processes["w1"].poll() is None, "the first worker goes on"
    finally:
        codes = workers.stop_all()
    lines = (tmp_path / "w2.log").read_text(errors="replace").splitlines()
    assert code == 2, workers.logs()
    pid, host = workers.processes["w1"].pid, socket.gethostname()
    assert lines[-1] == (
        f"error: --state-dir {tmp_path / 'state-w1'} is in use by another streamjoin worker of "
        f"app e2e-{unique} (pid {pid} on {host}): give each worker its own --state-dir (the "
        "processes of one host share one only as `streamjoin worker --processes N`)"
    ), lines
    assert codes["w1"] == 0, workers.logs()


async def test_processes_of_a_host_each_keep_their_own_copy_of_a_global_table(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await ensure_topics(broker.bootstrap, suffixed(GEO_TOPICS, unique))
    workers = processes.Workers(broker.bootstrap, unique, tmp_path, app="geo_app:joins")
    workers.start("host", "--processes", "2")
    log = tmp_path / "host.log"

    def restored_by(child: int) -> bool:
        return any(
            line.startswith(f"[{child}] ") and f"global table countries-{unique}: restored" in line
            for line in log.read_text(errors="replace").splitlines()
        )

    try:
        deadline = time.monotonic() + 90
        while not (restored_by(0) and restored_by(1)):
            assert workers.processes["host"].poll() is None, workers.logs()
            assert time.monotonic() < deadline, workers.logs()
            await asyncio.sleep(0.2)
    finally:
        codes = workers.stop_all()
    app_dir = tmp_path / "state-host" / f"geo-{unique}"
    assert sorted(p.name for p in app_dir.glob("global*")) == ["global-0", "global-1"]
    assert codes == {"host": 0}, workers.logs()
    assert "error:" not in log.read_text(errors="replace"), workers.logs()
