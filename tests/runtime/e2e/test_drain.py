"""A warm scale-in (runtime/process/draining.py): a worker that gets SIGTERM under traffic keeps
running its tasks while the others learn them, hands them over, then leaves and exits 0; the
tasks restore (almost) nothing when they move. A second SIGTERM leaves without waiting; the
drain timeout bounds the wait. Nothing is lost on any path.

`streamjoin worker` processes on the clicks app (4 tasks), with a small acceptable recovery lag,
so that a task moved cold would have to restore its whole state on its new owner.
"""

from __future__ import annotations

import asyncio
import re
import signal
from pathlib import Path

import pytest
import worker_processes as processes

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

Workers, produce, read_joined = processes.Workers, processes.produce, processes.read_joined
AUCTIONS = 8_000
LAG = "50"
RESTORED = re.compile(r"task (\S+) restored (\d+) records")
SUSPENDED = re.compile(r"task (\S+) suspended")


def restores(workers: processes.Workers, name: str) -> list[tuple[str, int]]:
    """(task, records) of every restore worker `name` finished, in order."""
    text = (workers.tmp / f"{name}.log").read_text(errors="replace")
    return [(task, int(count)) for task, count in RESTORED.findall(text)]


async def moved_to(
    workers: processes.Workers, names: tuple[str, ...], before: dict[str, int], tasks: set[str]
) -> list[tuple[str, int]]:
    """The restores of `tasks` on workers `names` since `before` (restores each had), once
    every one of them runs there."""
    for _ in range(600):
        moved = [
            (task, count)
            for name in names
            for task, count in restores(workers, name)[before[name] :]
            if task in tasks
        ]
        if {task for task, _ in moved} == tasks:
            return moved
        await asyncio.sleep(0.1)
    raise AssertionError(f"{sorted(tasks)} did not all move to {names}\n{workers.logs()}")


async def exit_code(workers: processes.Workers, name: str, within_s: float) -> int:
    process = workers.processes[name]
    for _ in range(int(within_s * 10)):
        if (code := process.poll()) is not None:
            return code
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} did not exit within {within_s} s\n{workers.logs()}")


async def test_a_stopping_worker_hands_its_tasks_off_warm_then_exits_0(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    options = ("--acceptable-recovery-lag", LAG, "--drain-timeout", "90")
    for name in ("w1", "w2", "w3"):
        workers.start(name, *options)
    try:
        for name in ("w1", "w2", "w3"):
            await workers.wait_for_log(name, "is running", 120)
        producing = asyncio.create_task(
            produce(broker.bootstrap, unique, range(AUCTIONS), pace_s=0.25)
        )
        await asyncio.sleep(6)  # state builds up under traffic
        assert not producing.done(), "the scale-in must happen under load"
        before = {name: len(restores(workers, name)) for name in ("w1", "w2")}
        workers.signal("w3", signal.SIGTERM)
        assert await exit_code(workers, "w3", 120) == 0
        log = (tmp_path / "w3.log").read_text(errors="replace")
        assert "every task handed off warm" in log, workers.logs()
        handed = set(SUSPENDED.findall(log.partition("stopping: handing")[2]))
        assert handed, workers.logs()
        moved = await moved_to(workers, ("w1", "w2"), before, handed)
        # The learners restored the state; at the move only what the last moments added.
        assert all(count <= 1_000 for _, count in moved), f"{moved}\n{workers.logs()}"

        # A second SIGTERM leaves at once, without the hand-off.
        workers.signal("w2", signal.SIGTERM)
        await workers.wait_for_log("w2", "handing", 30)
        workers.signal("w2", signal.SIGTERM)
        assert await exit_code(workers, "w2", 60) == 0
        assert "drain cut short" in (tmp_path / "w2.log").read_text(errors="replace")
        await producing
        seen = await read_joined(broker.bootstrap, unique, AUCTIONS, within_s=120)

        # Alone in the group, w1 leaves at once: nobody to hand to, no rebalance to ask for.
        await workers.wait_for_log("w1", "leader of 1)", 60)
        workers.signal("w1", signal.SIGTERM)
        assert await exit_code(workers, "w1", 60) == 0
        log = (tmp_path / "w1.log").read_text(errors="replace")
        assert "no other worker in the group" in log, workers.logs()
        assert "stopping: handing" not in log, workers.logs()
    finally:
        workers.stop_all()
    missing = sorted(set(range(AUCTIONS)) - seen.keys())
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"
    print(f"restored at the warm hand-off: {moved}")


async def test_the_drain_timeout_bounds_the_wait_and_loses_nothing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """The other worker is frozen (SIGSTOP): no rebalance can complete, so the drain can only
    end by its timeout; the worker then leaves as before, and the other one, thawed, takes
    every task over."""
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    workers.start("w2", "--drain-timeout", "3")
    try:
        await processes.produce(broker.bootstrap, unique, range(2_000), pace_s=0)
        for name in ("w1", "w2"):
            await workers.wait_for_log(name, "is running", 120)
        workers.signal("w1", signal.SIGSTOP)
        workers.signal("w2", signal.SIGTERM)
        try:
            assert await exit_code(workers, "w2", 60) == 0
        finally:
            workers.signal("w1", signal.SIGCONT)
        assert "drain timeout (3 s) passed" in (tmp_path / "w2.log").read_text(errors="replace")
        await processes.produce(broker.bootstrap, unique, range(2_000, 3_000), pace_s=0)
        seen = await read_joined(broker.bootstrap, unique, 3_000, within_s=120)
    finally:
        workers.stop_all()
    missing = sorted(set(range(3_000)) - seen.keys())
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"
