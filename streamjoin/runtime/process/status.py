"""A worker's live state for `GET /status` (served on its metrics endpoint; `streamjoin status`
reads it): its membership, each task it has a role in, and its recent rebalances.

    {"process_id": "...", "members": [{
        "member_id", "generation", "state", "leader", "assignor", "protocol", "pid", "index",
        "capacity", "joined_at_ms", "last_commit_ms", "next_probe_ms", "followup_on_catch_up",
        "acceptable_recovery_lag",
        "tasks": {"<subtopology>_<partition>": {"name", "role", "warmup", "state",
                  "changelog_lag", "restore_rate", "eta_s", "input_lag", "records_per_s",
                  "late_records", "dead_letters"}},
        "rebalances": [{"generation", "at_ms", "reasons", "moved", "pauses_s", "took_s"}]}]}

One member per worker process; `--processes N` answers with every process's member (the
supervisor merges them, status_files.py). Task ids are the assignment's ("0_3"), the ones the
group's own metadata uses, each with its name in the app ("attribute_3").

Rates (restore, records/s) come from a sample a second of counters the tasks keep anyway (the
restore events' counts, the tasks' input positions), never from the per-record path.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.runtime.process.metrics import RestoreTracker
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.tasks.rebalances import RebalanceRecorder
from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager

__all__ = ("StatusSettings", "WorkerStatus", "input_lags")

SAMPLE_INTERVAL_S = 1.0
_PAUSE_CHECKS_PER_SAMPLE = 4
_RATE_WEIGHT = 0.5
"""Each new second's rate counts half: steady enough to read, quick to follow a change."""


@dataclass(frozen=True, slots=True)
class StatusSettings:
    capacity: int
    acceptable_recovery_lag: int
    followup_on_catch_up: bool
    index: int | None = None
    """The process's index under `--processes` (None: a worker on its own)."""


class _Rate:
    """Events per second of a growing count, smoothed."""

    __slots__ = ("last", "per_s")

    def __init__(self, count: int) -> None:
        self.last = count
        self.per_s: float | None = None

    def update(self, count: int, seconds: float) -> None:
        now = (count - self.last) / seconds if count >= self.last else 0.0  # started over
        self.per_s = (
            now if self.per_s is None else _RATE_WEIGHT * now + (1 - _RATE_WEIGHT) * self.per_s
        )
        self.last = count


class WorkerStatus:
    def __init__(
        self,
        *,
        manager: TaskManager,
        roles: WorkerRoles,
        state: StateManager,
        consumer: CooperativeConsumer,
        recorder: RebalanceRecorder,
        restores: RestoreTracker,
        settings: StatusSettings,
        last_commit_ms: Callable[[], int | None],
    ) -> None:
        self._manager, self._roles, self._state = manager, roles, state
        self._consumer, self._recorder, self._restores = consumer, recorder, restores
        self._settings = settings
        self._last_commit_ms = last_commit_ms
        self._restored: dict[str, _Rate] = {}
        self._processed: dict[TaskId, _Rate] = {}
        self._sampled_at = time.monotonic()

    async def run(self) -> None:
        """Sample the rates every second; look for the end of hand-off pauses in between."""
        while True:
            for _ in range(_PAUSE_CHECKS_PER_SAMPLE):
                await asyncio.sleep(SAMPLE_INTERVAL_S / _PAUSE_CHECKS_PER_SAMPLE)
                self._recorder.check_pauses()
            self.sample()

    def sample(self) -> None:
        now = time.monotonic()
        seconds, self._sampled_at = max(now - self._sampled_at, 1e-3), now
        restored = {task: p.restored for task, p in self._restores.latest.items()}
        self._restored = _updated(self._restored, restored, seconds)
        processed = {
            task: sum(active.running.positions().values())
            for task, active in self._manager.active.items()
            if active.running is not None
        }
        self._processed = _updated(self._processed, processed, seconds)

    def document(self) -> dict[str, Any]:
        """The answer to GET /status."""
        return {"process_id": self._roles.process_id, "members": [self.member()]}

    def member(self) -> dict[str, Any]:
        member = self._consumer.member
        told = self._roles.assignor.latest
        recorder = self._recorder
        return {
            "member_id": member.member_id,
            "process_id": self._roles.process_id,
            "generation": member.generation,
            "state": member.state.value,
            "leader": member.is_leader,
            "assignor": member.assignor_name,
            "protocol": None if member.protocol is None else member.protocol.name.lower(),
            "pid": os.getpid(),
            "index": self._settings.index,
            "capacity": self._settings.capacity,
            "joined_at_ms": recorder.joined_at_ms,
            "last_commit_ms": self._last_commit_ms(),
            "next_probe_ms": None if told is None or told.next_probe_ms < 0 else told.next_probe_ms,
            "followup_on_catch_up": self._settings.followup_on_catch_up,
            "acceptable_recovery_lag": self._settings.acceptable_recovery_lag,
            "tasks": self._tasks(),
            "rebalances": [entry.as_json() for entry in reversed(recorder.history)],
        }

    def _tasks(self) -> dict[str, dict[str, Any]]:
        roles = self._roles.roles()
        found: dict[str, dict[str, Any]] = {}
        topology = self._roles.topology
        named = [(t, "active") for t in roles.active]
        named += [(t, "standby") for t in roles.standby] + [(t, "learner") for t in roles.learner]
        for task, role in named:
            key = str(topology.to_assignment(task))
            warmup = task in roles.warmup
            found[key] = {"name": str(task), "role": role, "warmup": warmup}
            found[key].update(self._figures(task, role, warmup))
        return dict(sorted(found.items()))

    def _figures(self, task: TaskId, role: str, warmup: bool) -> dict[str, Any]:
        active = self._manager.active.get(task)
        running = active is not None and active.running is not None
        kept = self._state.task(str(task))
        lag = kept.lag() if kept is not None else None
        restore = self._restored.get(str(task))
        rate = None if restore is None or running else restore.per_s
        figures: dict[str, Any] = {
            "state": _state_of(role, owned=active is not None, running=running),
            "changelog_lag": lag,
            "restore_rate": None if rate is None else round(rate, 1),
            "eta_s": None if running else self._eta(role, warmup, lag, rate),
        }
        if active is None:
            return figures
        processed = self._processed.get(task)
        members = active.running.members if active.running is not None else ()
        figures |= {
            "input_lag": sum(self._lag(tp) or 0 for tp in active.inputs),
            "records_per_s": None
            if processed is None or processed.per_s is None
            else round(processed.per_s, 1),
            "late_records": sum(
                m.processor.counters.late for m in members if isinstance(m, JoinTask)
            ),
            "dead_letters": sum(m.dead_letters for m in members),
        }
        return figures

    def _lag(self, tp: TopicPartition) -> int | None:
        return self._consumer.lag(tp) if tp in self._consumer.assignment() else None

    def _eta(self, role: str, warmup: bool, lag: int | None, rate: float | None) -> float | None:
        """Seconds until a learner (or warm-up, or restoring active) is caught up: 0 once it is,
        None while its rate is unknown, and for a standby kept for fail-over only."""
        if lag is None or (role == "standby" and not warmup):
            return None
        acceptable = self._settings.acceptable_recovery_lag if role != "active" else 0
        behind = max(0, lag - acceptable)
        if behind == 0:
            return 0.0
        return None if not rate else round(behind / rate, 1)


def input_lags(consumer: CooperativeConsumer) -> list[tuple[TopicPartition, int]]:
    """Records behind the high watermark of each input partition the worker owns (known)."""
    return [
        (tp, lag) for tp in sorted(consumer.assignment()) if (lag := consumer.lag(tp)) is not None
    ]


def _state_of(role: str, *, owned: bool, running: bool) -> str:
    if role != "active":
        return "tailing"
    if not owned:
        return "waiting for its partitions"  # the cooperative step holds them back
    return "running" if running else "restoring"


def _updated(rates: dict[Any, _Rate], counts: dict[Any, int], seconds: float) -> dict[Any, _Rate]:
    """The rates of the keys counted now (the others are gone)."""
    kept = {}
    for key, count in counts.items():
        rate = rates.get(key)
        if rate is None:
            rate = _Rate(count)
        else:
            rate.update(count, seconds)
        kept[key] = rate
    return kept
