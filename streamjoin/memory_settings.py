"""The worker's memory budget in numbers: its default, how it splits between the newest window
records, the pending non-matches, the input buffers and RocksDB, and sizes as people write them.

Below both the spec and the stores: an app's settings (dsl/settings.py) are checked against the
same split the stores' budget applies (state/memory.py), without the spec importing the engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rocksdict import BlockBasedOptions, Options

from streamjoin.errors import ConfigurationError

__all__ = (
    "DEFAULT_MEMORY_BUDGET_BYTES",
    "MIB",
    "MIN_ROCKSDB_BYTES",
    "RocksDBOptionsSetter",
    "fetch_share",
    "format_size",
    "input_share",
    "parse_size",
    "pending_share",
    "recent_share",
)

MIB = 1 << 20

DEFAULT_MEMORY_BUDGET_BYTES = 256 * MIB
"""Five sixteenths (80 MiB, less 1 MiB per open store) for the newest window records: the ads
join's 65 s window at 1,250 records/s per worker is about 80,000 records, ~65 MiB as counted
here. A sixteenth (16 MiB) for the left and outer joins' pending non-matches in memory (about
25,000 records; the rest wait in their store and come back into memory as they fall due). A
sixteenth (16 MiB) for fetched records waiting in the tasks' input buffers: about
40,000 ad records, seconds of traffic. A thirty-second (8 MiB) for the fetch answers the Kafka
client holds until they are read: 1 MiB a partition up to 8 partitions, less each beyond
(kafka/fetch_sizes.py). The rest for RocksDB: a third of it (45 MiB) write buffers, which a
worker of 32 tasks (96 stores) shares in memtables of about 3 MiB, the rest data and index blocks.
With the interpreter (~40 MiB) and the Kafka clients it fits a 512 MiB container with room
to spare."""

MIN_ROCKSDB_BYTES = 8 * MIB
"""Least the RocksDB part may have: below it, memtables flush at a few records each."""

RocksDBOptionsSetter = Callable[[str, Options, BlockBasedOptions], None]
"""`setter(store_name, options, table_options)`, called for every store before it opens, after
the budget's own settings (Kafka Streams' rocksdb.config.setter). The table options already
hold the shared block cache: replacing it takes that store out of the budget."""

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """'256MiB', '1GiB', '512MB', '268435456' -> bytes. KiB/MiB/GiB (and K/M/G) are binary,
    KB/MB/GB decimal."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ConfigurationError(
            f"memory size {text!r} is not understood: write a number of bytes with an optional "
            "unit, e.g. 256MiB, 1GiB, 512MB"
        )
    number, unit = float(match[1]), (match[2] or "").upper()
    decimal = unit.endswith("B") and len(unit) == 2  # KB, MB, GB, TB
    factor = 1000 ** " KMGT".index(unit[0]) if decimal else _UNITS[unit[:1]]
    return int(number * factor)


def format_size(size: int) -> str:
    if size >= MIB:
        return f"{size / MIB:.0f} MiB" if size % MIB == 0 else f"{size / MIB:.1f} MiB"
    return f"{size} bytes"


def input_share(total_bytes: int) -> int:
    """The part of a budget for fetched records waiting in the tasks' input buffers."""
    return total_bytes // 16


def fetch_share(total_bytes: int) -> int:
    """The part of a budget for fetch answers the Kafka client holds until they are read."""
    return total_bytes // 32


def pending_share(total_bytes: int) -> int:
    """The part of a budget for the joins' pending non-matches held in memory."""
    return total_bytes // 16


def recent_share(total_bytes: int, recent_bytes: int | None) -> int:
    """The newest window records' part of a budget (default five sixteenths), checked."""
    recent = total_bytes * 5 // 16 if recent_bytes is None else recent_bytes
    others = input_share(total_bytes) + fetch_share(total_bytes) + pending_share(total_bytes)
    if recent < 0 or total_bytes - recent - others < MIN_ROCKSDB_BYTES:
        raise ConfigurationError(
            f"memory budget {format_size(total_bytes)} with {format_size(recent)} for the "
            f"newest window records leaves RocksDB less than {format_size(MIN_ROCKSDB_BYTES)}; "
            "raise the budget or lower window_memory_bytes"
        )
    return recent
