"""The topics a join reads and writes, with the serdes of their keys and values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamjoin.dsl.serdes import Serde, serde_for
from streamjoin.errors import ConfigurationError

__all__ = ("Table", "Topic", "make_topic")


@dataclass(frozen=True, slots=True)
class Topic:
    """A stream of records. `partitions` is required only for topics streamjoin creates."""

    name: str
    key_serde: Serde = field(compare=False)
    value_serde: Serde = field(compare=False)
    value_type: Any = field(default=None, compare=False)
    partitions: int | None = None


@dataclass(frozen=True, slots=True)
class Table(Topic):
    """A compacted topic read as a table: the latest value per key, materialised in a store."""


def make_topic(
    cls: type[Topic], name: str, value_type: Any, key_type: Any, partitions: int | None
) -> Topic:
    if not name or not isinstance(name, str):
        raise ConfigurationError(f"a topic needs a non-empty name, got {name!r}")
    if partitions is not None and (isinstance(partitions, bool) or partitions < 1):
        raise ConfigurationError(
            f"topic {name!r}: partitions must be a positive int, got {partitions!r}"
        )
    return cls(name, serde_for(key_type), serde_for(value_type), value_type, partitions)
