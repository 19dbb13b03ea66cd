"""The supervisor of `streamjoin worker --processes N`, on stand-in children (no broker): it
restarts dead children, gives up with one line naming the cause, and stops them on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from streamjoin.runtime.process.supervisor import RestartPolicy, Supervisor

FAST = RestartPolicy(max_deaths=3, window_s=60, first_backoff_s=0.01, max_backoff_s=0.05)


def child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def test_children_that_keep_dying_end_it_with_one_line_naming_the_cause(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    starts = tmp_path / "starts"
    dying = child(
        "import sys, pathlib\n"
        f"with pathlib.Path({str(starts)!r}).open('a') as f: f.write('x')\n"
        "print('2026-11-25 10:00:00,000 WARNING x: a warning with Error in it', file=sys.stderr)\n"
        "raise RuntimeError('the disk is full')"
    )
    supervisor = Supervisor([], 2, policy=FAST, command=dying)
    assert await supervisor.run() == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: worker processes died 3 times within 60 s")
    assert last.endswith("exit status 1: RuntimeError: the disk is full")
    assert "[0] Traceback" in err and "[1] Traceback" in err
    assert 3 <= len(starts.read_text()) <= 4  # the other child may be starting when it gives up
    assert sum(c.restarts for c in supervisor.children) >= 1


async def test_a_child_refusing_its_settings_is_not_restarted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    refusing = child(
        "import sys; print('error: --state-dir x: not writable', file=sys.stderr); sys.exit(2)"
    )
    supervisor = Supervisor([], 1, policy=FAST, command=refusing)
    assert await supervisor.run() == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (
        "error: process 0 refused to run: exit status 2: error: --state-dir x: not writable"
    )
    assert supervisor.children[0].restarts == 0


def named(directory: Path, prefix: str) -> set[int]:
    return {int(p.name.removeprefix(prefix)) for p in directory.glob(f"{prefix}*")}


async def test_sigterm_stops_every_child_gracefully_and_exits_0(tmp_path: Path) -> None:
    graceful = child(
        "import os, signal, sys, time, pathlib\n"
        f"here = pathlib.Path({str(tmp_path)!r})\n"
        "def stop(*_):\n"
        "    (here / f'stopped-{os.getpid()}').touch()\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "(here / f'ready-{os.getpid()}').touch()\n"
        "while True: time.sleep(1)\n"
    )
    supervisor = Supervisor([], 2, policy=FAST, command=graceful)
    running = asyncio.create_task(supervisor.run())
    for _ in range(1200):  # a SIGTERM before a child's handler is set would kill it
        if len(named(tmp_path, "ready-")) == 2:
            break
        await asyncio.sleep(0.1)
    assert len(named(tmp_path, "ready-")) == 2, "the children did not start within 120 s"
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(running, 30) == 0
    pids = {c.process.pid for c in supervisor.children if c.process is not None}
    assert named(tmp_path, "stopped-") == pids == named(tmp_path, "ready-")
    assert all(c.restarts == 0 for c in supervisor.children)
