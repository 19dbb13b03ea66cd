"""The worker under exactly-once: each commit interval is one transaction of the worker's
transactional producer (output/transaction_state.py) holding every task's outputs, changelog writes
and input offsets; a failed transaction loses every task and starts the worker's producer and
group membership over from the committed offsets."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from aiokafka.errors import KafkaError

from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.kafka.transactions import MemberIdentity, TransactionAborted
from streamjoin.runtime.output.producer_sink import DeliveryError, ProducerSink
from streamjoin.runtime.output.purge import RepartitionPurger
from streamjoin.runtime.output.transaction_state import TransactionState
from streamjoin.runtime.tasks.manager import TaskManager, TasksLost
from streamjoin.state.errors import StateError
from streamjoin.state.manager import StateManager

__all__ = ("commit_transaction", "run_restarting")

logger = logging.getLogger(__name__)

_MAX_FRUITLESS_RESTARTS = 3
"""Transactions failing this many times in a row without one commit stop the worker (a
configuration problem, not a passing fault)."""


async def run_restarting(
    attempt: Callable[[], Coroutine[Any, Any, None]],
    *,
    exactly_once: bool,
    stopping: Callable[[], bool],
    committed: Callable[[], bool],
) -> None:
    """Run `attempt` (one producer, one group membership); exactly-once: start over when its
    transaction fails, unless the worker is stopping or `committed()` stayed false too often."""
    restarts = 0
    while True:
        try:
            await attempt()
            return
        except (TransactionAborted, TasksLost, KafkaError, DeliveryError, StateError) as exc:
            restarts = 0 if committed() else restarts + 1
            if not exactly_once or stopping() or restarts > _MAX_FRUITLESS_RESTARTS:
                raise
            logger.warning(
                "exactly-once: the transaction failed (%s: %s); it is aborted, this "
                "worker's tasks are lost and it joins its group again",
                type(exc).__name__,
                exc,
            )


async def commit_transaction(
    txn: TransactionState,
    manager: TaskManager,
    *,
    sink: ProducerSink,
    state: StateManager,
    consumer: CooperativeConsumer,
    purger: RepartitionPurger,
) -> bool:
    """One transaction holds every task's outputs, changelog writes and input offsets since
    the last commit; commit it and begin the next. Every task takes part (as in Kafka
    Streams): a revocation commits all tasks, not only those leaving. False, committing
    nothing, while the group member rejoins: its generation is about to change, and the
    coordinator would refuse the offsets (and every task would be lost); the transaction
    stays open until the member has its next one (as Kafka Streams commits no task while a
    rebalance is in progress)."""
    if manager.failure is not None:
        raise manager.failure
    member = consumer.member
    async with member.holding_generation() as session:
        if session is None:
            return False
        offsets = manager.positions(None)
        await sink.flush()
        await state.prepare_commit()
        identity = MemberIdentity(
            member.group_id, session.generation, session.member_id, member.config.group_instance_id
        )
        await txn.commit(offsets, identity, still_owned=lambda: manager.failure)
    state.complete_commit()
    purger.after_commit(offsets)
    return True
