"""Saying so while input offsets go uncommitted. A commit waits for the broker three times (the
outputs' delivery, the changelog writes' confirmation, the group coordinator's answer); while it
waits no input offset is committed, so a restart would repeat everything since, and a worker whose
commit never returns looks healthy from outside. Each wait past `WARN_AFTER_S` is logged while it
lasts, naming what the commit waits for. A refused commit is said in one place (`report_refused`):
a warning when nothing will retry it, else an INFO line (the next commit retries it) until offsets
have gone uncommitted for `REFUSED_WARN_AFTER_S`. In a worker, broker_watch.OutageLogFilter lets
each line through once a minute, and not while the broker is known to be down: its own line says
that."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import TypeVar

from streamjoin.group.errors import CommitFailedError

__all__ = ("REFUSED_WARN_AFTER_S", "WARN_AFTER_S", "report_refused", "waited")

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


def report_refused(
    refused: CommitFailedError,
    *,
    retried: bool,
    broker_lost: bool,
    last_commit_ms: int | None,
    now_ms: float,
) -> None:
    """Say that a commit was refused. `retried` is false where no later commit of this worker
    carries these offsets (a revocation's commit: the partitions are leaving)."""
    if not retried:
        logger.warning(
            "the revoked partitions' offsets were not committed (their next owner repeats what "
            "was processed since the last commit): %s",
            refused,
        )
    elif not refused.retriable:
        logger.warning("offsets not committed (they will be reprocessed): %s", refused)
    elif broker_lost:
        return  # the broker watch has said so, once
    elif last_commit_ms is not None and now_ms - last_commit_ms > REFUSED_WARN_AFTER_S * 1000:
        logger.warning(
            "input offsets have not been committed for %.0f s, every commit since refused (last: "
            "%s); a restart would repeat what was processed since",
            (now_ms - last_commit_ms) / 1000,
            refused,
        )
    else:
        logger.info("offsets not committed yet (the next commit carries them): %s", refused)
