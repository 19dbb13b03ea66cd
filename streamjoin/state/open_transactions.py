"""Says when a restore waits at a changelog transaction that is neither committed nor aborted.

Under exactly-once a restoring active reads on to every record its changelogs hold (see
`TaskState.on_progress`), so a transaction left open there holds the task back: a previous
owner's last commit whose markers the broker has not written yet (milliseconds), or the open
transaction of a worker that stopped without ending it (until the broker aborts it, within the
transaction timeout). The second is worth a line while it lasts."""

from __future__ import annotations

import logging

__all__ = ("NOTICE_AFTER_S", "OpenTransactionWait")

logger = logging.getLogger(__name__)

NOTICE_AFTER_S = 2.0
"""A wait this long is not a commit's markers on their way: say so."""


class OpenTransactionWait:
    """One task's restore: since when each store's reading waits at an open transaction."""

    def __init__(self, task_id: str) -> None:
        self._task_id = task_id
        self._since: dict[str, float] = {}
        self._said: set[str] = set()

    def observe(self, store: str, position: int, stable: int, highwater: int, now: float) -> None:
        """The reader is at `position`; committed records end at `stable`, all at `highwater`."""
        if position < stable or stable >= highwater:
            self._since.pop(store, None)
            return
        since = self._since.setdefault(store, now)
        if now - since >= NOTICE_AFTER_S and store not in self._said:
            self._said.add(store)
            logger.warning(
                "task %s waits %.0fs to restore store %r: its changelog holds records %d-%d of "
                "a transaction neither committed nor aborted yet; a worker that stopped with "
                "one open is fenced by the broker within its transaction timeout",
                self._task_id,
                now - since,
                store,
                stable,
                highwater - 1,
            )

    def clear(self) -> None:
        self._since.clear()
        self._said.clear()
