"""The aiokafka internals streamjoin reads, all in this module, for what aiokafka has no public
way to do:

- a transactional producer's id and epoch, and telling its transaction manager that a consumer
  group joined the transaction: kafka/transactions.py sends AddOffsetsToTxn and TxnOffsetCommit
  v3 itself, because aiokafka's `send_offsets_to_transaction` sends v0, without the member's
  identity that KIP-447 fences on;
- a consumer's fetch position without awaiting `position()` (a coroutine): group/feed.py counts
  lag from it, in synchronous code (metrics, progress lines), past transaction markers;
- a consumer's fetch sizes after it started: group/feed.py sizes them to the partitions it is
  assigned (kafka/fetch_sizes.py), where aiokafka takes them only when the consumer is made;
- dropping a consumer's fetched, unread answers before a change of assignment or a pause,
  which would otherwise drop them: aiokafka's parsed answer and its record iterator form a
  reference cycle, which a worker's collector, its survivors frozen, frees only at its hourly
  full collection (runtime/process/gc_tuning.py), with up to a partition's fetch bytes each.

They hold for aiokafka 0.13 and 0.14, the releases pyproject allows (tests/kafka/
test_aiokafka_internals.py passes on both): it checks them against a broker, and the position
against aiokafka's public `position()`, so a release that changes them fails there
(`release_fetched`: tests/group/test_paused_fetches.py, through the feed that uses it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import aiokafka

from streamjoin.assignment.model import TopicPartition

__all__ = (
    "FetchSizes",
    "TransactionIds",
    "fetch_position",
    "fetch_sizes",
    "group_joined_transaction",
    "release_fetched",
    "set_fetch_sizes",
    "transaction_ids",
)


@dataclass(frozen=True, slots=True)
class TransactionIds:
    """What a transactional request names its producer by (the epoch fences older ones)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class FetchSizes:
    """What a consumer's next fetch requests may bring: per partition, and in all."""

    partition_bytes: int
    total_bytes: int


def fetch_sizes(consumer: aiokafka.AIOKafkaConsumer) -> FetchSizes:
    """The sizes the consumer's fetcher asks for now (the consumer must be started)."""
    fetcher = consumer._fetcher
    return FetchSizes(fetcher._max_partition_fetch_bytes, fetcher._fetch_max_bytes)


def set_fetch_sizes(consumer: aiokafka.AIOKafkaConsumer, sizes: FetchSizes) -> None:
    """Have a started consumer's next fetch requests ask for `sizes`
    (`max_partition_fetch_bytes`, `fetch_max_bytes`)."""
    fetcher = consumer._fetcher
    fetcher._max_partition_fetch_bytes = sizes.partition_bytes
    fetcher._fetch_max_bytes = sizes.total_bytes


def _transaction_manager(producer: aiokafka.AIOKafkaProducer) -> Any:
    manager = producer._txn_manager
    if manager is None or manager.transactional_id is None:
        raise ValueError("the producer has no transactional_id")
    return manager


def transaction_ids(producer: aiokafka.AIOKafkaProducer) -> TransactionIds:
    """The ids of a started transactional producer, as they are now."""
    manager = _transaction_manager(producer)
    return TransactionIds(manager.transactional_id, manager.producer_id, manager.producer_epoch)


def group_joined_transaction(producer: aiokafka.AIOKafkaProducer, group_id: str) -> None:
    """Tell the producer that `group_id`'s offsets are in its open transaction (AddOffsetsToTxn
    succeeded), so that `commit_transaction` ends it even when no record was produced."""
    _transaction_manager(producer).consumer_group_added(group_id)


def fetch_position(consumer: aiokafka.AIOKafkaConsumer, tp: TopicPartition) -> int | None:
    """The consumer's position in `tp`: the next offset it fetches from, past skipped
    transaction markers; None when `tp` is not assigned or has no position yet."""
    subscription = consumer._subscription.subscription
    if subscription is None:
        return None
    assignment = subscription.assignment
    if assignment is None:
        return None
    state = assignment.state_value(tp)
    if state is None or not state.has_valid_position:
        return None
    position: int = state.position
    return position


def release_fetched(
    consumer: aiokafka.AIOKafkaConsumer, partitions: Iterable[TopicPartition] | None = None
) -> None:
    """Drop the fetched answers not yet read of these partitions (None: of all), ending each
    one's record iterator so that reference counting frees it at once (see the docstring)."""
    fetched: dict[TopicPartition, Any] = consumer._fetcher._records
    for tp in list(fetched) if partitions is None else partitions:
        records = getattr(fetched.pop(tp, None), "_partition_records", None)
        iterator = getattr(records, "_records_iterator", None)
        if iterator is not None:
            iterator.close()
