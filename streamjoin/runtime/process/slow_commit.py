"""Saying so while a commit waits. A commit waits for the broker three times (the outputs'
delivery, the changelog writes' confirmation, the group coordinator's answer); while it waits no
input offset is committed, so a restart would repeat everything since, and a worker whose commit
never returns looks healthy from outside. Each wait past `WARN_AFTER_S` is logged while it lasts,
naming what the commit waits for; so is a run of refused commits (each refusal retried by the next
commit, logged at INFO) once offsets have gone uncommitted for `REFUSED_WARN_AFTER_S`. In a worker,
broker_watch.OutageLogFilter lets each line through once a minute, and not while the broker is
known to be down: its own line says that."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ("REFUSED_WARN_AFTER_S", "WARN_AFTER_S", "said_while_uncommitted", "waited")

logger = logging.getLogger(__name__)

WARN_AFTER_S = 10.0
REFUSED_WARN_AFTER_S = 30.0

T = TypeVar("T")


async def waited(step: Awaitable[T], what: str, warn_after_s: float = WARN_AFTER_S) -> T:
    """Await `step`, logging every `warn_after_s` it has not ended; cancelled with it."""
    task = asyncio.ensure_future(step)
    started = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=warn_after_s)
            if done:
                return task.result()
            logger.warning(
                "the commit has waited %.0f s for %s; input offsets are not committed meanwhile "
                "(a restart would repeat what was processed since): check the broker's health",
                time.monotonic() - started,
                what,
            )
    except asyncio.CancelledError:
        task.cancel()
        raise


def said_while_uncommitted(last_commit_ms: int | None, refused: Exception, now_ms: float) -> None:
    """A commit was refused and the next one retries it: past `REFUSED_WARN_AFTER_S` since the
    last commit that went through, say so."""
    if last_commit_ms is None:
        return
    uncommitted_s = (now_ms - last_commit_ms) / 1000
    if uncommitted_s > REFUSED_WARN_AFTER_S:
        logger.warning(
            "input offsets have not been committed for %.0f s, every commit since refused (last: "
            "%s); a restart would repeat what was processed since",
            uncommitted_s,
            refused,
        )
