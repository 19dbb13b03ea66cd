"""JoinSpec: a join as plain data, read by both engines (the asyncio worker and Spark)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from streamjoin.dsl.topics import Table, Topic
from streamjoin.dsl.windows import JoinWindows

__all__ = ("JOIN_KINDS", "JoinKind", "JoinSpec", "Joiner")

JoinKind = Literal["inner", "left", "outer"]
JOIN_KINDS: tuple[JoinKind, ...] = ("inner", "left", "outer")

Joiner = Callable[[Any, Any], Any]
"""Builds the output value from the left and right values (None for a missing side)."""


@dataclass(frozen=True, slots=True)
class JoinSpec:
    """One join of an app. Stream-stream when `right` is a Topic (then `window` is set),
    stream-table when it is a Table. Each join is its own sub-topology: its tasks are its
    partition numbers."""

    name: str
    left: Topic
    right: Topic
    how: JoinKind
    into: Topic
    joiner: Joiner
    window: JoinWindows | None = None

    @property
    def is_stream_table(self) -> bool:
        return isinstance(self.right, Table)

    @property
    def input_topics(self) -> tuple[str, str]:
        return (self.left.name, self.right.name)
