"""What a member owns, changed only together with the listener call that announces the change.

Revoked and lost partitions leave the owned set only after the listener returned, so the
application can still commit revoked offsets from `on_revoked`; a slow callback is reported,
since the coordinator removes members that take longer than the rebalance timeout to rejoin.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.listener import RebalanceListener

__all__ = ("Ownership",)

logger = logging.getLogger(__name__)

Partitions = frozenset[TopicPartition]


class Ownership:
    """The member's partitions and whether it may commit them."""

    def __init__(
        self, group_id: str, listener: RebalanceListener, rebalance_timeout: float
    ) -> None:
        self.group_id = group_id
        self.partitions: Partitions = frozenset()
        self.commits_blocked = False
        """Set from the moment partitions are lost to an EAGER selection until the member has
        its next assignment (KIP-726; docs/rebalancing.md)."""
        self._listener = listener
        self._rebalance_timeout = rebalance_timeout

    async def revoke(self, partitions: Partitions) -> None:
        await self._notify(self._listener.on_revoked, partitions)
        self.partitions -= partitions

    async def lose(self, partitions: Partitions) -> None:
        await self._notify(self._listener.on_lost, partitions)
        self.partitions -= partitions

    async def release_all(self, *, lost: bool) -> None:
        """Revoke (or lose) everything owned, e.g. when the member stops."""
        if self.partitions:
            await (self.lose(self.partitions) if lost else self.revoke(self.partitions))

    async def add(self, partitions: Partitions) -> None:
        """Own these too; the listener hears of them even when empty (the rebalance completed)."""
        self.partitions |= partitions
        await self._notify(self._listener.on_assigned, partitions)

    def joined(self) -> None:
        """A JoinGroup answered (`RebalanceListener.on_joined`)."""
        try:
            self._listener.on_joined()
        except Exception:
            logger.exception("group %s: rebalance listener on_joined failed", self.group_id)

    async def _notify(
        self, callback: Callable[[Partitions], Awaitable[None]], partitions: Partitions
    ) -> None:
        started = time.monotonic()
        try:
            await callback(partitions)
        except Exception:
            logger.exception(
                "group %s: rebalance listener %s failed; the member goes on",
                self.group_id,
                callback.__name__,
            )
        elapsed = time.monotonic() - started
        if elapsed > self._rebalance_timeout:
            logger.warning(
                "group %s: %s took %.1f s, longer than the rebalance timeout; the coordinator "
                "may remove the member from the group",
                self.group_id,
                callback.__name__,
                elapsed,
            )
