"""How much of a partition one fetch may bring, so that a consumer's fetched-but-unread records
stay within a number of bytes however many partitions it is assigned.

aiokafka keeps one fetch answer per partition until the application has read it, each up to
`max_partition_fetch_bytes` (Kafka's default 1 MiB), so a consumer holds up to that much per
assigned partition: 64 partitions, 64 MiB, outside any budget. Sizing the per-partition limit
from a total and the assignment keeps the sum within the total; a floor keeps fetches worth a
round trip, and past the floor the total is exceeded (the caller says so).
"""

from __future__ import annotations

__all__ = (
    "KAFKA_PARTITION_FETCH_BYTES",
    "MIN_PARTITION_FETCH_BYTES",
    "fetch_bytes_needed",
    "partition_fetch_bytes",
)

KAFKA_PARTITION_FETCH_BYTES = 1 << 20
"""Kafka's (and aiokafka's) default max.partition.fetch.bytes: never asked for more."""

MIN_PARTITION_FETCH_BYTES = 64 * 1024
"""The least a partition's fetch may bring: below it a backlog takes a round trip per few
hundred records. (The broker still answers a batch larger than the limit whole, KIP-74.)"""


def partition_fetch_bytes(total_bytes: int, partitions: int) -> int:
    """The per-partition fetch limit that keeps `partitions` buffered answers within
    `total_bytes`: at most Kafka's default, at least `MIN_PARTITION_FETCH_BYTES`."""
    share = total_bytes // max(1, partitions)
    return max(MIN_PARTITION_FETCH_BYTES, min(KAFKA_PARTITION_FETCH_BYTES, share))


def fetch_bytes_needed(total_bytes: int, partitions: int) -> int:
    """What `partitions` buffered answers may hold at the limit `partition_fetch_bytes` gives:
    `total_bytes` or less, unless the floor takes more."""
    return partitions * partition_fetch_bytes(total_bytes, partitions)
