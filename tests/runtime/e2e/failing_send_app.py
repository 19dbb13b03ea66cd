"""The clicks app in a worker whose output sends fail during a revocation, for the drills.

In a worker started with DRILL_HOLD_OUTPUTS set: once the file it names exists, the worker's
batches to the output topic are held, unsent (a broker that stopped acknowledging them), and
when partitions are next revoked they fail as a timed-out send does: the revocation's commit
meets a failed send."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaTimeoutError
from clicks_app import SUFFIX, joins

from streamjoin.runtime.tasks.manager import TaskManager

__all__ = ("joins",)

HOLD_ENV = "DRILL_HOLD_OUTPUTS"
HOLD = Path(os.environ.get(HOLD_ENV, "/nonexistent"))
OUTPUT = f"attributed-{SUFFIX}"
HELD_LOG = "drill: holding the output sends"

_held: list[asyncio.Future[Any]] = []
_send_batch = AIOKafkaProducer.send_batch
_on_revoked = TaskManager.on_revoked


def _armed() -> bool:
    return HOLD.exists()


async def _holding(self: AIOKafkaProducer, batch: Any, topic: str, *, partition: int) -> Any:
    if topic != OUTPUT or not _armed():
        return await _send_batch(self, batch, topic, partition=partition)
    if not _held:
        logging.getLogger(__name__).warning(HELD_LOG)
    delivery: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    _held.append(delivery)
    return delivery


async def _failing(self: TaskManager, partitions: frozenset[Any]) -> None:
    for delivery in _held:
        if not delivery.done():
            delivery.set_exception(KafkaTimeoutError("Batch expired"))
    await _on_revoked(self, partitions)


if HOLD_ENV in os.environ:  # in the worker (importing it elsewhere changes nothing)
    AIOKafkaProducer.send_batch = _holding  # type: ignore[method-assign]
    TaskManager.on_revoked = _failing  # type: ignore[method-assign]
