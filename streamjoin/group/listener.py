"""Callbacks through which a group member tells the application what it owns.

Every callback is awaited before the member goes on, which is what makes the protocols safe: under
EAGER the member joins only after `on_revoked` returned; under COOPERATIVE it asks for the
follow-up rebalance (which hands the partitions to their new owner) only after `on_revoked`
returned. Commit the revoked partitions' offsets in `on_revoked`. `on_lost` means the partitions
may already belong to another member: drop them without committing.
"""

from __future__ import annotations

from streamjoin.assignment.model import TopicPartition

__all__ = ("RebalanceListener",)


class RebalanceListener:
    """Override the callbacks you need; the defaults do nothing."""

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions newly owned in this generation (empty when nothing was added)."""

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions given up cleanly; their offsets may still be committed."""

    def on_joined(self) -> None:
        """A JoinGroup answered: every member has joined this generation, so each has finished
        revoking (`on_revoked`) what it gave up before. Not awaited: start work, don't do it."""

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions lost (fenced, session expired, or EAGER selected after holding them
        cooperatively); commits are refused until the member has rejoined."""
