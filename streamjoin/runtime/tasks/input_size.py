"""The memory of the records waiting in the tasks' input buffers, estimated without visiting
each of them: a running mean of the fetched records' size, times how many wait.

The worker pauses fetching once the estimate passes the memory budget's input part (as Kafka
Streams' input.buffer.max.bytes, KIP-770): a per-partition count alone let the buffers grow with
the number of tasks (20,000 records per input, about 12 MB of ad records, times two inputs per
task).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

__all__ = ("MAX_BUFFERED_PER_INPUT", "RECORD_OVERHEAD_BYTES", "RecordSize", "inputs_to_pause")

T = TypeVar("T")

MAX_BUFFERED_PER_INPUT = 20_000
"""Records of one input partition a task may hold before that partition is paused."""

RECORD_OVERHEAD_BYTES = 128
"""A buffered record's memory besides its key and value: the ConsumerRecord object, the
headers of its bytes objects, its slot in the buffer (measured with tracemalloc: 290 bytes for
a 13-byte key and a 200-byte value)."""

_SAMPLES_PER_BATCH = 8
_MEMORY = 1_000
"""The mean follows about the last this many sampled records."""


class RecordSize:
    """Bytes a buffered record takes, on average over the recent fetches."""

    def __init__(self) -> None:
        self.mean = float(RECORD_OVERHEAD_BYTES)
        self._samples = 0

    def observe(self, records: Sequence[Any]) -> None:
        """Fold a fetched batch in: a few of its records, spread over it."""
        step = max(1, len(records) // _SAMPLES_PER_BATCH)
        for record in records[::step]:
            size = RECORD_OVERHEAD_BYTES + len(record.key or b"") + len(record.value or b"")
            self._samples = min(self._samples + 1, _MEMORY)
            self.mean += (size - self.mean) / self._samples

    def bytes_of(self, records: int) -> int:
        return int(records * self.mean)


def inputs_to_pause(
    buffered: Mapping[T, int], limit: int, max_bytes: int, size: RecordSize
) -> set[T]:
    """Of the inputs (records buffered from each), those to pause: each with over `limit`
    records (one side racing ahead must not starve the fetching of the side it waits for) and,
    while all of them together take over `max_bytes`, each with any. An input with none is
    never paused for bytes: a task waiting for that side gets its records, so the buffers
    drain (Kafka Streams pauses the same way)."""
    over = size.bytes_of(sum(buffered.values())) > max_bytes
    return {tp for tp, count in buffered.items() if count > limit or (over and count > 0)}
