"""Which offsets of which partitions a Spark job reads: planned on the driver from the log start
and the fetched high watermark of each partition, optionally narrowed per topic or partition.

    --offsets clicks=100:          every partition of clicks from offset 100 to its end
    --offsets clicks/2=100:5000    partition 2 of clicks, offsets [100, 5000)
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.watermarks import LogBounds, log_bounds, topic_partitions

__all__ = (
    "OffsetRange",
    "OffsetSelection",
    "parse_offset_selection",
    "plan_ranges",
    "ranges_from_json",
    "ranges_to_json",
    "run_sync",
)

T = TypeVar("T")

_SELECTION = re.compile(r"^(?P<topic>[^=/]+?)(?:/(?P<partition>\d+))?=(?P<start>\d*):(?P<end>\d*)$")


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """Offsets [start, end) of one topic partition: one Spark input partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True, slots=True)
class OffsetSelection:
    """A user's narrowing of a topic (or one of its partitions) to [start, end); None keeps the
    log's own start or end."""

    topic: str
    partition: int | None
    start: int | None
    end: int | None


def parse_offset_selection(text: str) -> OffsetSelection:
    """TOPIC=START:END or TOPIC/PARTITION=START:END; either bound may be left empty."""
    match = _SELECTION.match(text.strip())
    if match is None:
        raise ConfigurationError(
            f"offsets {text!r}: use TOPIC=START:END or TOPIC/PARTITION=START:END "
            "(either bound may be empty, e.g. clicks=100:)"
        )
    partition, start, end = match["partition"], match["start"], match["end"]
    return OffsetSelection(
        match["topic"],
        int(partition) if partition else None,
        int(start) if start else None,
        int(end) if end else None,
    )


def _narrow(bounds: LogBounds, selections: Sequence[OffsetSelection]) -> OffsetRange:
    start, end = bounds.start, bounds.end
    for s in selections:
        if s.topic == bounds.topic and s.partition in (None, bounds.partition):
            start = max(start, s.start if s.start is not None else start)
            end = min(end, s.end if s.end is not None else end)
    return OffsetRange(bounds.topic, bounds.partition, start, max(start, end))


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code, even inside a running event loop
    (a notebook, an async test): on a private loop in a helper thread."""

    async def call() -> T:
        return await make()

    with ThreadPoolExecutor(1, thread_name_prefix="streamjoin-sync") as pool:
        return pool.submit(asyncio.run, call()).result()


def plan_ranges(
    bootstrap: KafkaTarget, topics: Iterable[str], selections: Sequence[OffsetSelection] = ()
) -> list[OffsetRange]:
    """One range per partition of `topics`: log start to high watermark, narrowed by
    `selections`."""
    wanted = sorted(set(topics))

    async def bounds() -> list[LogBounds]:
        return await log_bounds(bootstrap, await topic_partitions(bootstrap, wanted))

    return [_narrow(b, selections) for b in run_sync(bounds)]


def ranges_to_json(ranges: Sequence[OffsetRange]) -> str:
    return json.dumps([[r.topic, r.partition, r.start, r.end] for r in ranges])


def ranges_from_json(text: str) -> list[OffsetRange]:
    return [OffsetRange(str(t), int(p), int(s), int(e)) for t, p, s, e in json.loads(text)]
