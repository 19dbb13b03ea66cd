"""`bench/worker_runner.py` subprocesses seen from a benchmark: each one's status over time and
its restores, and what they add up to for the group (all times `time.time()`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamjoin.lifetime import die_with_parent

__all__ = (
    "RunnerProcess",
    "Snapshot",
    "keep_logs",
    "owners_over_time",
    "rss_bytes",
    "settled",
    "terminate",
    "until",
)

RUNNER = Path(__file__).resolve().parent / "worker_runner.py"


@dataclass(frozen=True)
class Snapshot:
    """One status line of a worker."""

    t: float
    active: frozenset[str]
    running: frozenset[str]
    warmup: frozenset[str]
    records_in: int
    buffered: int
    stall: float
    """Longest the worker's event loop ran late since its previous line."""
    late: int
    """Late records of the worker's joins (joined or not), so far."""
    assignments: int
    """Assignments the worker received, so far."""
    budgeted: int
    """Bytes the memory budget counts in use: RocksDB's, the newest records', input buffers'."""
    rss: int
    """The worker's resident memory, bytes."""
    memory: dict[str, int] | None
    """With --memory-probe: the budget's parts and the allocators' figures (memory_probe.py)."""

    @classmethod
    def parse(cls, line: dict[str, Any]) -> Snapshot:
        return cls(
            line["t"],
            frozenset(line["active"]),
            frozenset(line["running"]),
            frozenset(line["warmup"]),
            line["in"],
            line["buffered"],
            line["stall"],
            line["late"],
            line["assignments"],
            line["budgeted"],
            line["rss"],
            line.get("memory"),
        )


@dataclass
class RunnerProcess:
    name: str
    arguments: list[str]
    log: Path
    history: list[Snapshot] = field(default_factory=list)
    restores: list[dict[str, Any]] = field(default_factory=list)
    """The worker's restore-started, restore-progress and restored (completed) lines."""
    censuses: list[list[dict[str, Any]]] = field(default_factory=list)
    """With --memory-probe, each SIGUSR1's census: tracked objects by type."""
    _process: asyncio.subprocess.Process | None = None
    _reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    @property
    def latest(self) -> Snapshot | None:
        return self.history[-1] if self.history else None

    async def start(self) -> None:
        with self.log.open("wb") as err:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                str(RUNNER),
                *self.arguments,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                env=os.environ.copy(),
                preexec_fn=die_with_parent,
            )
        self._reader = asyncio.create_task(self._read(), name=f"read {self.name}")

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        async for raw in self._process.stdout:
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                if line.get("event") == "status":
                    self.history.append(Snapshot.parse(line))
                elif str(line.get("event")).startswith("restore"):
                    self.restores.append(line)
                elif line.get("event") == "census":
                    self.censuses.append(line["types"])

    def restored_between(self, task: str, start: float, end: float) -> int:
        """Changelog records this worker read for `task` (in any role) between two times, as
        far as its progress lines (every 0.5 s) tell."""
        total, in_session = 0, 0
        at_start = None
        for line in self.restores:
            if line["task"] != task:
                continue
            if at_start is None and line["t"] > start:
                at_start = total + in_session
            if line["t"] > end:
                break
            if line["event"] == "restore-started":
                total, in_session = total + in_session, 0
            else:
                in_session = line["restored"]
        return total + in_session - (at_start if at_start is not None else total + in_session)

    async def kill(self) -> None:
        """SIGKILL: no commit, no leaving the group (a crash)."""
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await self._process.wait()
        if self._reader is not None:
            await self._reader

    async def stop(self) -> None:
        """SIGTERM (commit, leave the group), SIGKILL if that takes longer than 30 s."""
        if self._process is not None:
            await terminate(self._process)
        if self._reader is not None:
            await self._reader

    def log_tail(self, lines: int = 20) -> str:
        if not self.log.exists():
            return "(not started)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory (`field` "VmHWM": its peak so far), from /proc; 0 once it
    has exited."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    return 0


def keep_logs(work: Path, into: Path) -> None:
    """Copy the logs of a run's processes (`work`'s *.log) into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    for log in work.glob("*.log"):
        shutil.copy(log, into / log.name)


async def terminate(process: asyncio.subprocess.Process, grace_s: float = 30) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within `grace_s`."""
    if process.returncode is not None:
        return
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), grace_s)
    except TimeoutError:
        process.kill()
        await process.wait()


def settled(workers: list[RunnerProcess], tasks: int, since: float) -> bool:
    """As reported after `since`: every task running on exactly one worker, the same number
    on each, and no warm-ups (learners, or standbys a move warms up in)."""
    latest = [w.latest for w in workers]
    if any(s is None or s.t < since for s in latest):
        return False
    share = tasks // len(workers)
    running = [s.running for s in latest if s is not None]
    balanced = all(
        len(s.running) == share and s.active == s.running and not s.warmup
        for s in latest
        if s is not None
    )
    return balanced and len(frozenset().union(*running)) == tasks


def owners_over_time(workers: list[RunnerProcess], since: float) -> tuple[dict[str, str], int]:
    """(owner of each active task at `since`, number of owner changes of active tasks after)."""
    lines = sorted((s.t, w.name, s.active) for w in workers for s in w.history)
    current: dict[str, frozenset[str]] = {}
    owner: dict[str, str] = {}
    initial: dict[str, str] = {}
    moves = 0
    for t, name, active in lines:
        current[name] = active
        if t <= since:
            owner = {task: n for n, tasks in current.items() for task in tasks}
            initial = dict(owner)
            continue
        for task in active:
            if owner.get(task) not in (None, name):
                moves += 1
            owner[task] = name
    return initial, moves


async def until(condition: Callable[[], bool], within: float, what: str) -> None:
    """Poll `condition` (state spread over worker processes) until true, or TimeoutError."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {within:.0f} s: {what}")
        await asyncio.sleep(0.05)
