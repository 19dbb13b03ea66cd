"""Where a consumer resumes when its position is not in the log: no committed offset yet, or a
committed offset that retention deleted (or a topic re-created empty) while the app was away.

aiokafka resets such positions silently (an INFO line at most), so the consumer runs aiokafka
with no reset policy and applies the policy here: the first case quietly, the second with one
warning saying what was skipped and where reading resumed; policy "none" stops instead.
"""

from __future__ import annotations

import logging
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import NoOffsetForPartitionError, OffsetOutOfRangeError

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.offset_policy import OffsetReset, OffsetResetError

__all__ = ("PositionReset",)

logger = logging.getLogger(__name__)


class PositionReset:
    """Applies the policy to the partitions aiokafka reported without a valid position."""

    def __init__(self, consumer: AIOKafkaConsumer, policy: OffsetReset) -> None:
        self._consumer = consumer
        self.policy = policy

    async def apply(
        self, error: NoOffsetForPartitionError | OffsetOutOfRangeError
    ) -> set[TopicPartition]:
        """Seek the partitions of `error` that are still assigned; returns them, so that the
        caller delivers from their new positions. Raises OffsetResetError under "none"."""
        reported: dict[Any, int | None] = (
            dict(error.args[0])
            if isinstance(error, OffsetOutOfRangeError)
            else {error.args[0]: None}
        )
        assigned = self._consumer.assignment()
        lost = {tp: offset for tp, offset in reported.items() if tp in assigned}
        if not lost:
            return set()
        if self.policy == "none":
            tp, offset = next(iter(sorted(lost.items())))
            where = (
                "has no committed offset"
                if offset is None
                else f"offset {offset} is not in the log"
            )
            raise OffsetResetError(
                f"input {tp.topic}[{tp.partition}] {where} and auto_offset_reset is none: "
                "choose earliest or latest to resume, or commit an offset for the group"
            )
        partitions = list(lost)
        if self.policy == "earliest":
            await self._consumer.seek_to_beginning(*partitions)
        else:
            await self._consumer.seek_to_end(*partitions)
        for tp, offset in sorted(lost.items()):
            if offset is not None:
                await self._warn(tp, offset)
        return {TopicPartition(tp.topic, tp.partition) for tp in lost}

    async def _warn(self, tp: TopicPartition, offset: int) -> None:
        position: int = await self._consumer.position(tp)
        skipped = (
            f"{position - offset} records skipped"
            if position > offset
            else "the log restarted below it (topic re-created?)"
        )
        logger.warning(
            "input %s[%d]: offset %d is no longer in the log (deleted by retention, or the topic "
            "was re-created); resuming from the %s offset %d: %s (auto_offset_reset=%s)",
            tp.topic,
            tp.partition,
            offset,
            "oldest" if self.policy == "earliest" else "newest",
            position,
            skipped,
            self.policy,
        )
