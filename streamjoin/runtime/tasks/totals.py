"""What a worker's join and key_by tasks have counted, over every task it has run: the running
tasks' own counters plus what the tasks it no longer runs had counted when they left (a task
that moves away must not take its share of the worker's totals with it)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from streamjoin.dsl.app import App
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.repartition import RepartitionTask
from streamjoin.runtime.tasks.running import MemberTask

__all__ = ("TaskTotals",)


class TaskTotals:
    def __init__(self, app: App) -> None:
        self._app = app
        self._retired: defaultdict[str, JoinCounters] = defaultdict(JoinCounters)
        """Counters of tasks this worker no longer runs, by join."""
        self._rekeyed: Counter[str] = Counter()
        """Records re-keyed by repartition tasks this worker no longer runs, by sub-topology."""
        self._dead_letters: Counter[str] = Counter()

    def retire(self, members: Iterable[MemberTask]) -> None:
        """Keep what a task's members counted: the task leaves this worker."""
        for task in members:
            if isinstance(task, JoinTask):
                self._retired[task.spec.name].add(task.processor.counters)
                self._dead_letters[task.spec.name] += task.dead_letters
            else:
                self._rekeyed[task.repartition.subtopology] += task.records_out
                self._dead_letters[task.repartition.join] += task.dead_letters

    def counters(self, running: list[MemberTask]) -> dict[str, tuple[JoinCounters, int]]:
        """Per join: its counters and dead letters (those of the key_by tasks feeding it too)."""
        totals: dict[str, tuple[JoinCounters, int]] = {}
        for spec in self._app.joins:
            counters = JoinCounters()
            counters.add(self._retired[spec.name])
            dead = self._dead_letters[spec.name]
            for task in running:
                if isinstance(task, JoinTask) and task.spec.name == spec.name:
                    counters.add(task.processor.counters)
                    dead += task.dead_letters
                elif isinstance(task, RepartitionTask) and task.repartition.join == spec.name:
                    dead += task.dead_letters
            totals[spec.name] = (counters, dead)
        return totals

    def rekeyed(self, running: list[MemberTask]) -> Counter[str]:
        """Records each key_by sub-topology wrote to its repartition topic."""
        total = Counter(self._rekeyed)
        for task in running:
            if isinstance(task, RepartitionTask):
                total[task.repartition.subtopology] += task.records_out
        return total
