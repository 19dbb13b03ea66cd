"""Stopping the worker without hanging. Its loop and its clients wait for the broker (a send to
a deleted topic waits for that topic's metadata as long as the request timeout, minutes), so
once the worker has failed or lost its broker each stop step gets a few seconds, is then
cancelled, and is left behind if it still does not end."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from aiokafka.errors import KafkaError

__all__ = ("closed", "until_failed")

logger = logging.getLogger(__name__)

_STEP_S = 3.0
"""How long one stop step may take once the worker has failed or lost its broker."""


async def until_failed(work: Coroutine[Any, Any, None], watch: Coroutine[Any, Any, None]) -> None:
    """Run `work` to its end, unless `watch` raises first: then `work` is cancelled and the
    watch's error raised. A task that does not end within seconds of its cancellation (a send
    waiting for a topic's metadata) is left behind, not waited for."""
    working = asyncio.create_task(work, name="worker loop")
    watching = asyncio.create_task(watch, name="broker watch")
    try:
        await asyncio.wait({working, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (working, watching):
            task.cancel()
        _, stuck = await asyncio.wait({working, watching}, timeout=_STEP_S)
        for task in stuck:
            logger.warning("%s did not stop when cancelled; left behind", task.get_name())
    first = watching if watching.done() and not watching.cancelled() else working
    if first.done():
        first.result()


async def closed(closing: Coroutine[Any, Any, None], *, quickly: bool) -> None:
    """Close a client or the stores; after a failure or without a broker, give it a few
    seconds (it would wait for answers), then cancel it and leave it if it does not end."""
    if not quickly:
        await closing
        return
    task = asyncio.ensure_future(closing)
    try:
        done, _ = await asyncio.wait({task}, timeout=_STEP_S)
        if not done:
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=_STEP_S)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        logger.warning("%s did not stop when cancelled; left behind", task.get_coro())
    elif not task.cancelled() and not isinstance(task.exception(), KafkaError | None):
        task.result()
