"""Restore and learner progress as rich progress bars, when the worker runs on a terminal."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from streamjoin.state.events import RestoreCompleted, RestoreProgress, RestoreStarted, StateEvent

__all__ = ("RestoreProgressBars",)


class RestoreProgressBars:
    """A bar per task reading its changelogs: restoring actives, and standbys or learners until
    they have caught up. Subscribe it to the state manager's events."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,.0f} restored, {task.fields[remaining]} to go"),
            console=console or Console(stderr=True),
            transient=True,
        )
        self._bars: dict[str, TaskID] = {}
        self._started = False

    @staticmethod
    def wanted(console: Console | None = None) -> bool:
        return (console or Console(stderr=True)).is_terminal

    def __call__(self, event: StateEvent) -> None:
        if isinstance(event, RestoreStarted):
            if not self._started:
                self._progress.start()
                self._started = True
            role = "standby/learner" if event.standby else "restore"
            self._bars[event.task_id] = self._progress.add_task(
                f"{role} {event.task_id}", total=None, remaining="?"
            )
        elif isinstance(event, RestoreProgress) and event.task_id in self._bars:
            bar = self._bars[event.task_id]
            remaining = event.remaining
            total = None if remaining is None else event.restored + remaining
            self._progress.update(
                bar,
                completed=event.restored,
                total=total,
                remaining="?" if remaining is None else f"{remaining:,}",
            )
            if event.standby and remaining == 0:
                self._done(event.task_id)
        elif isinstance(event, RestoreCompleted):
            self._done(event.task_id)

    def _done(self, task_id: str) -> None:
        bar = self._bars.pop(task_id, None)
        if bar is not None:
            self._progress.remove_task(bar)

    def stop(self) -> None:
        if self._started:
            self._progress.stop()
            self._started = False
