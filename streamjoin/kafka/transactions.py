"""Input offsets inside a producer's transaction, fenced by the consumer group member (KIP-447).

aiokafka's `send_offsets_to_transaction` sends TxnOffsetCommit v0, without the member's
generation and id, so a member that lost its partitions could still commit them. Here
AddOffsetsToTxn goes to the transaction coordinator as aiokafka would send it, then
TxnOffsetCommit v3 with the member's identity to the group coordinator; the producer's
transaction manager is told the group joined the transaction, so `commit_transaction` ends it
even when no record was produced (the producer's ids and that call are aiokafka internals, kept
in kafka/aiokafka_internals.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.client import ConnectionGroup, CoordinationType
from aiokafka.errors import KafkaError
from aiokafka.protocol.transaction import AddOffsetsToTxnRequest

from streamjoin.assignment.model import TopicPartition
from streamjoin.errors import StreamJoinError
from streamjoin.kafka.aiokafka_internals import group_joined_transaction, transaction_ids
from streamjoin.kafka.txn_protocol import TxnOffsetCommitV3Request

__all__ = (
    "MemberIdentity",
    "TransactionAborted",
    "TransactionFenced",
    "send_offsets_to_transaction",
)

_RETRY_S = 0.05
_RETRY_MAX_S = 1.0

# Kafka error codes (the protocol's own numbers).
_NONE = 0
_UNKNOWN_TOPIC_OR_PARTITION = 3
_REQUEST_TIMED_OUT = 7
_COORDINATOR_LOAD_IN_PROGRESS = 14
_COORDINATOR_NOT_AVAILABLE = 15
_NOT_COORDINATOR = 16
_ILLEGAL_GENERATION = 22
_UNKNOWN_MEMBER_ID = 25
_REBALANCE_IN_PROGRESS = 27
_INVALID_PRODUCER_EPOCH = 47
_CONCURRENT_TRANSACTIONS = 51
_FENCED_INSTANCE_ID = 82
_PRODUCER_FENCED = 90

_RETRIABLE = frozenset(
    {
        _UNKNOWN_TOPIC_OR_PARTITION,
        _REQUEST_TIMED_OUT,
        _COORDINATOR_LOAD_IN_PROGRESS,
        _COORDINATOR_NOT_AVAILABLE,
        _NOT_COORDINATOR,
        _CONCURRENT_TRANSACTIONS,
    }
)
_MEMBER_FENCED = frozenset({_ILLEGAL_GENERATION, _UNKNOWN_MEMBER_ID, _FENCED_INSTANCE_ID})
_PRODUCER_FENCED_CODES = frozenset({_INVALID_PRODUCER_EPOCH, _PRODUCER_FENCED})


class TransactionAborted(StreamJoinError):
    """The transaction cannot commit; abort it and rewind the tasks to the committed offsets."""


class TransactionFenced(TransactionAborted):
    """The member lost its partitions (generation or member id refused) or a newer incarnation
    of the producer took over: the tasks are lost."""

    def __init__(self, message: str, *, producer: bool) -> None:
        super().__init__(message)
        self.producer = producer
        """True when the producer itself is fenced and must be replaced."""


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """The consumer group member whose offsets a transaction commits."""

    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None = None


async def send_offsets_to_transaction(
    producer: Any,
    offsets: Mapping[TopicPartition, int],
    member: MemberIdentity,
    *,
    within_s: float,
) -> None:
    """Add `offsets` (next offset to read) to the producer's open transaction as `member`'s.

    Raises TransactionFenced or TransactionAborted; retriable broker answers are retried for
    `within_s` seconds."""
    ids = transaction_ids(producer)  # fixed for the transaction's life
    deadline = time.monotonic() + within_s
    await _until_done(
        producer,
        deadline,
        coordinator=CoordinationType.TRANSACTION,
        key=ids.transactional_id,
        request=lambda: AddOffsetsToTxnRequest(
            ids.transactional_id, ids.producer_id, ids.producer_epoch, member.group_id
        ),
        codes=lambda response: [response.error_code],
        what="AddOffsetsToTxn",
    )
    group_joined_transaction(producer, member.group_id)
    by_topic: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    for tp, offset in offsets.items():
        by_topic[tp.topic].append((tp.partition, offset))
    await _until_done(
        producer,
        deadline,
        coordinator=CoordinationType.GROUP,
        key=member.group_id,
        request=lambda: TxnOffsetCommitV3Request(
            transactional_id=ids.transactional_id,
            group_id=member.group_id,
            producer_id=ids.producer_id,
            producer_epoch=ids.producer_epoch,
            generation_id=member.generation,
            member_id=member.member_id,
            group_instance_id=member.group_instance_id,
            offsets=by_topic,
        ),
        codes=lambda response: [code for _, rows, _ in response.topics for _, code, _ in rows],
        what=f"TxnOffsetCommit (member {member.member_id}, generation {member.generation})",
    )


async def _until_done(
    producer: Any,
    deadline: float,
    *,
    coordinator: CoordinationType,
    key: str,
    request: Any,
    codes: Any,
    what: str,
) -> None:
    client = producer.client
    delay = _RETRY_S
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            node = await client.coordinator_lookup(coordinator, key)
            response = await client.send(node, request(), group=ConnectionGroup.COORDINATION)
        except NotImplementedError:  # aiokafka: the broker has no version we can send
            raise TransactionAborted(
                f"{what}: the broker lacks the request version exactly-once needs "
                "(KIP-447: Apache Kafka 2.5 or newer)"
            ) from None
        except (KafkaError, OSError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            errors = [c for c in codes(response) if c != _NONE]
            if not errors:
                return
            fenced = _MEMBER_FENCED.intersection(errors) or _PRODUCER_FENCED_CODES.intersection(
                errors
            )
            if fenced:
                code = min(fenced)
                raise TransactionFenced(
                    f"{what} refused with error {code}: "
                    + (
                        "this member lost its partitions"
                        if code in _MEMBER_FENCED
                        else "a newer producer with this transactional id took over"
                    ),
                    producer=code in _PRODUCER_FENCED_CODES,
                )
            if not _RETRIABLE.issuperset(errors):
                hint = " (a rebalance is under way)" if _REBALANCE_IN_PROGRESS in errors else ""
                raise TransactionAborted(f"{what} refused with errors {sorted(errors)}{hint}")
            last = f"errors {sorted(errors)}"
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, _RETRY_MAX_S)
    raise TransactionAborted(f"{what} did not succeed in time ({last})")
