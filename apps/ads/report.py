"""The demo's rebalancing story: which worker ran each task when, and why a task's output
paused (a hand-off after learning its state, or a restore after its worker left)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from workers import WorkerProcess, totals

_PARTITION = re.compile(r'partition="(\d+)"')
_TASK = re.compile(r'task="[^"]*_(\d+)"')


@dataclass(frozen=True, slots=True)
class Move:
    at: float
    """Seconds since the demo's start."""
    task: int
    source: str
    target: str


@dataclass
class Ownership:
    """Which worker runs each task, sampled from the workers' metrics (a task's input
    partitions show up in the consumer lag of the worker that runs it)."""

    input_topic: str
    owners: dict[int, str] = field(default_factory=dict)
    moves: list[Move] = field(default_factory=list)

    def observe(self, at: float, worker: str, samples: dict[str, dict[str, float]]) -> None:
        for labels in samples.get("streamjoin_consumer_lag", {}):
            found = _PARTITION.search(labels)
            if found is None or f'topic="{self.input_topic}"' not in labels:
                continue
            task = int(found.group(1))
            previous = self.owners.get(task)
            if previous != worker:
                if previous is not None:
                    self.moves.append(Move(at, task, previous, worker))
                self.owners[task] = worker

    async def follow(
        self, workers: Sequence[WorkerProcess], start: float, stop: asyncio.Event
    ) -> None:
        """Sample every half second until `stop` is set."""
        while not stop.is_set():
            for worker in workers:
                if worker.running:
                    samples = await asyncio.to_thread(worker.samples)
                    self.observe(time.monotonic() - start, worker.name, samples)
            await asyncio.sleep(0.5)


def restored_before_running(samples: dict[str, dict[str, float]]) -> dict[int, int]:
    """Per task: changelog records its worker restored before it could run it."""
    restored: dict[int, int] = {}
    for labels, value in samples.get("streamjoin_restored_before_running", {}).items():
        found = _TASK.search(labels)
        if found is not None:
            restored[int(found.group(1))] = int(value)
    return restored


def _move(move: Move, restored: dict[str, dict[int, int]], left: dict[str, float]) -> str:
    why = (
        f"as {move.source} left"
        if move.source in left and move.at >= left[move.source]
        else "in a follow-up rebalance"
    )
    count = restored.get(move.target, {}).get(move.task)
    if count is None:
        state = "its restore count is unknown"
    elif count == 0:
        state = f"{move.target} had learned its state beforehand, nothing left to restore"
    else:
        state = (
            f"{move.target} had no copy of its state (no standby) and restored {count:,} "
            "records before running it"
        )
    return f"{move.source} -> {move.target} at {move.at:.0f} s {why}; {state}"


def explain_pauses(
    pauses: dict[int, tuple[float, float]],
    ownership: Ownership,
    restored: dict[str, dict[int, int]],
    left: dict[str, float],
) -> list[str]:
    """One line per task: its longest output pause, when, and whether and why it moved.

    `pauses`: per task, the pause and when it began (seconds since the start);
    `restored`: per worker still running, records restored per task before running it;
    `left`: workers that left, with the time they were told to stop.
    """
    lines = []
    for task, (pause, began) in sorted(pauses.items(), key=lambda item: (item[1][0], item[0])):
        moves = [m for m in ownership.moves if m.task == task]
        owner = ownership.owners.get(task, "?")
        if moves:
            story = "; then ".join(_move(m, restored, left) for m in moves)
        elif owner in left:
            story = f"ran on {owner} until it left (the run's output was complete by then)"
        else:
            story = f"stayed on {owner}, nothing to restore"
        lines.append(f"  task {task}  {pause:4.1f} s from {began:4.1f} s  {story}")
    return lines


def worker_report(
    snapshots: dict[str, dict[str, dict[str, float]]],
    pauses: dict[int, tuple[float, float]],
    ownership: Ownership,
    left: dict[str, float],
) -> list[str]:
    """The summary from the remaining workers' last metrics and the sampled task moves."""
    metrics = {name: totals(samples) for name, samples in snapshots.items()}
    rebalances = ", ".join(
        f"{name} {int(m.get('streamjoin_rebalances_total', 0))}" for name, m in metrics.items()
    )

    def total(name: str) -> float:
        return sum(m.get(f"streamjoin_{name}", 0) for m in metrics.values())

    restored = {name: restored_before_running(s) for name, s in snapshots.items()}
    return [
        f"rebalances each remaining worker went through (assignments it received, whether or "
        f"not its tasks changed; {', '.join(left) or 'none'} left earlier): {rebalances}",
        f"remaining workers: {total('records_in_total'):,.0f} input records fetched, "
        f"{total('join_late_joined_total') + total('join_late_no_partner_total'):,.0f} late "
        f"records ({total('join_late_joined_total'):,.0f} joined), "
        f"{total('dead_letters_total'):,.0f} dead letters",
        f"longest output pause of each task from 8 s until all records were produced "
        f"({len(ownership.moves)} moves):",
        *explain_pauses(pauses, ownership, restored, left),
    ]
