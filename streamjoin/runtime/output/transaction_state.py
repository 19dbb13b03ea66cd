"""The worker's transactional producer under exactly-once (Kafka Streams' EOS v2): one open
transaction at all times, committed with the input offsets at every commit interval.

    start:  InitProducerId (fences and aborts the previous incarnation's transaction) -> begin
    commit: [outputs and changelogs already sent and acknowledged inside the transaction]
            -> AddOffsetsToTxn + TxnOffsetCommit v3 (the member's generation fences zombies)
            -> EndTxn(commit) -> begin the next

Anything that fails in between leaves the transaction to be aborted: by this worker starting
over, or by the broker when the transaction times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka.errors import KafkaError

from streamjoin.assignment.model import TopicPartition
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.transactions import (
    MemberIdentity,
    TransactionAborted,
    send_offsets_to_transaction,
)

__all__ = ("FAULT_ENV", "TransactionState", "transaction_timeout_ms")

logger = logging.getLogger(__name__)

_INIT_WITHIN_S = 30.0
_OFFSETS_WITHIN_S = 30.0
FAULT_ENV = "STREAMJOIN_FAULT_BEFORE_TXN_COMMIT"
"""Fault injection for tests: fail the process's Nth transaction that commits input offsets,
once, after its outputs and offsets are sent and before it commits."""
_fault = {"at": int(os.environ.get(FAULT_ENV, "0") or 0), "seen": 0}


def transaction_timeout_ms(commit_interval_s: float) -> int:
    """How long the broker lets a transaction stay open: a few commit intervals, at least 10 s
    (Kafka Streams' default). A crashed worker's transaction blocks `read_committed` readers of
    the partitions it wrote until then, unless its restarted incarnation aborts it first."""
    return max(10_000, int(commit_interval_s * 4_000))


class TransactionState:
    def __init__(self, producer: Any, transactional_id: str) -> None:
        self.producer = producer
        self.transactional_id = transactional_id
        self.commits = 0
        """Transactions committed by this producer."""
        self._committed: dict[TopicPartition, int] = {}

    async def start(self, bootstrap: str) -> None:
        """Start the producer and open the first transaction; one-line errors for brokers
        without (working) transactions."""
        try:
            await asyncio.wait_for(self.producer.start(), _INIT_WITHIN_S)
        except TimeoutError:
            await self._stop_quietly()
            raise ConfigurationError(
                f"processing guarantee exactly_once: no transaction coordinator at {bootstrap} "
                f"answered within {_INIT_WITHIN_S:.0f} s; check that the broker's "
                "transaction.state.log.replication.factor and transaction.state.log.min.isr do "
                "not exceed its number of brokers (at_least_once needs neither)"
            ) from None
        except KafkaError as exc:
            await self._stop_quietly()
            raise ConfigurationError(
                f"processing guarantee exactly_once: the broker at {bootstrap} does not support "
                f"transactions (InitProducerId failed: {type(exc).__name__}); at_least_once "
                "works on it"
            ) from None
        logger.info("exactly-once: transactional producer %r ready", self.transactional_id)
        await self.producer.begin_transaction()

    async def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        member: MemberIdentity,
        *,
        still_owned: Callable[[], BaseException | None],
    ) -> None:
        """Add `offsets` (when they moved) to the open transaction, commit it, begin the next.
        `still_owned()` returns why the tasks are gone, if they are: then nothing commits."""
        moved = {tp: o for tp, o in offsets.items() if self._committed.get(tp) != o}
        if moved:
            await send_offsets_to_transaction(
                self.producer, moved, member, within_s=_OFFSETS_WITHIN_S
            )
            _fault["seen"] += 1
            if _fault["seen"] == _fault["at"]:
                raise TransactionAborted(f"{FAULT_ENV}={_fault['at']}: injected failure")
        lost = still_owned()
        if lost is not None:
            raise lost
        await self.producer.commit_transaction()
        self._committed.update(moved)
        self.commits += 1
        await self.producer.begin_transaction()

    async def _stop_quietly(self) -> None:
        with contextlib.suppress(TimeoutError, KafkaError):
            await asyncio.wait_for(self.producer.stop(), 5)
