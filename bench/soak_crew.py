"""The soak's two workers across the incarnations that `--kill-every` makes (bench/soak.py),
and whether the group has processed the inputs to their ends."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from runner_process import RunnerProcess, Snapshot

from streamjoin.kafka.watermarks import log_bounds

__all__ = ("Crew", "cpu_seconds", "group_lag", "until_drained")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Crew:
    """The soak's workers, across the incarnations that --kill-every makes: figures that a
    killed worker reported last are kept (its late drops, records, assignments, CPU)."""

    def __init__(self, workers: list[RunnerProcess]) -> None:
        self.workers = workers
        self.retired: list[Snapshot] = []
        self.retired_cpu_s = 0.0
        self.kills = 0

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def _snapshots(self) -> list[Snapshot]:
        return self.retired + [w.latest for w in self.workers if w.latest is not None]

    def records_in(self) -> int:
        return sum(s.records_in for s in self._snapshots())

    def late(self) -> int:
        return sum(s.late for s in self._snapshots())

    def assignments(self) -> int:
        return sum(s.assignments for s in self._snapshots())

    def history(self) -> list[Snapshot]:
        return [s for w in self.workers for s in w.history]

    def cpu_s(self) -> float:
        return self.retired_cpu_s + sum(cpu_seconds(pid) for pid in self.pids)

    async def kill_one(self, log_dir: Path) -> None:
        """SIGKILL the next worker in turn and start it again on its state directory."""
        index = self.kills % len(self.workers)
        victim = self.workers[index]
        self.retired_cpu_s += cpu_seconds(victim.pid)
        await victim.kill()
        if victim.latest is not None:
            self.retired.append(victim.latest)
        self.kills += 1
        log = log_dir / f"{victim.name}.{self.kills}.log"
        again = RunnerProcess(victim.name, victim.arguments, log)
        await again.start()
        self.workers[index] = again

    async def stop(self) -> None:
        await asyncio.gather(*(w.stop() for w in self.workers))


async def group_lag(bootstrap: str, group: str, topics: list[str], partitions: int) -> int:
    """Records of `topics` past the group's committed offsets (all, where none is committed)."""
    tps = [TopicPartition(t, p) for t in topics for p in range(partitions)]
    bounds = await log_bounds(bootstrap, tps)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return sum(
        bound.end - (committed[tp].offset if tp in committed else 0)
        for tp, bound in zip(tps, bounds, strict=True)
    )


async def until_drained(lag: Callable[[], Awaitable[int]], within: float) -> None:
    """Until `lag()` is 0, asked every second; TimeoutError after `within` seconds."""
    deadline = time.monotonic() + within
    while (left := await lag()) > 0:
        if time.monotonic() > deadline:
            raise TimeoutError(f"not drained within {within:.0f} s ({left} records left)")
        await asyncio.sleep(1.0)
