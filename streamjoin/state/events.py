"""Restore progress as typed events, for progress bars (CLI), metrics and tests.

Listeners are plain callables run synchronously in the event loop: keep them quick. A listener
that raises is logged and skipped; it never stops a restore.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

__all__ = (
    "RestoreCompleted",
    "RestoreProgress",
    "RestoreStarted",
    "StateEvent",
    "StateEvents",
    "StateListener",
    "StateWiped",
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RestoreStarted:
    """A task began reading its changelogs (an active to restore, or a standby to tail)."""

    task_id: str
    standby: bool
    start_offsets: dict[str, int]
    """Store name -> changelog offset the read starts from."""


@dataclass(frozen=True, slots=True)
class RestoreProgress:
    task_id: str
    standby: bool
    restored: int
    """Records applied since the task began reading."""
    remaining: int | None
    """Records behind the changelogs' high watermarks; None until every one is known."""


@dataclass(frozen=True, slots=True)
class RestoreCompleted:
    """An active task caught up with its changelogs and may process."""

    task_id: str
    restored: int
    seconds: float
    """Reading the changelogs; a compaction the task then waited for is logged apart."""


@dataclass(frozen=True, slots=True)
class StateWiped:
    """A store's local data was deleted and will be restored from the changelog's beginning."""

    task_id: str
    store: str
    reason: str


StateEvent = RestoreStarted | RestoreProgress | RestoreCompleted | StateWiped
StateListener = Callable[[StateEvent], None]


class StateEvents:
    """Fan-out of state events to subscribed listeners."""

    def __init__(self) -> None:
        self._listeners: list[StateListener] = []

    def subscribe(self, listener: StateListener) -> Callable[[], None]:
        """Register `listener`; returns a function that unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def publish(self, event: StateEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("state event listener %r failed on %r", listener, event)
