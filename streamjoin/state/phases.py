"""A task's phases, and what a task needs to be promoted from standby in place (task_state.py)."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable

from streamjoin.assignment.model import TopicPartition

__all__ = ("RUNNING_ACTIVE_OFFSET_SUM", "ReadEnds", "TaskPhase")

RUNNING_ACTIVE_OFFSET_SUM = -2
"""Offset sum a running active reports: caught up by definition (Kafka Streams' LATEST)."""

ReadEnds = Callable[[Iterable[TopicPartition]], Awaitable[dict[TopicPartition, int]]]
"""Changelog partition -> its end, from fetches sent after the call (state/end_offsets.py)."""


class TaskPhase(enum.Enum):
    RESTORING = "restoring"
    RUNNING = "running"
    STANDBY = "standby"
    SUSPENDED = "suspended"
    CLOSED = "closed"
