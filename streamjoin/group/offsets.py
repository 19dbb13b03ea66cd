"""A member's offset commits and reads, fenced by its member id and generation.

A refused commit is always raised as CommitFailedError and logged, never dropped. Whether it can
be retried depends on when it was refused: during a rebalance the member still owns the
partitions and commits again under its next generation; refused while the member believed itself
stable means the member was fenced, so its partitions are reported lost and it rejoins.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.coordinator import GroupCoordinatorClient
from streamjoin.group.errors import (
    CommitFailedError,
    CoordinatorUnavailable,
    ErrorCode,
    GroupError,
    MemberFenced,
    RebalanceInProgress,
)
from streamjoin.group.heartbeat import Session

__all__ = ("GroupOffsets",)

logger = logging.getLogger(__name__)


class GroupOffsets:
    """Commit and fetch a group's offsets for one member."""

    def __init__(
        self,
        coordinator: GroupCoordinatorClient,
        *,
        timeout: float,
        stable_session: Callable[[], Session | None],
        fenced: Callable[[Session, MemberFenced], None],
    ) -> None:
        self._coordinator = coordinator
        self._group = coordinator.group_id
        self._timeout = timeout
        self._stable_session = stable_session
        self._fenced = fenced

    async def commit(
        self, offsets: Mapping[TopicPartition, int], session: Session, *, refused: str | None
    ) -> None:
        """Commit under `session`; `refused` says why the member may not commit at all now."""
        if not offsets:
            return
        if refused is not None:
            raise CommitFailedError(
                f"group {self._group}: member {session.member_id or '<new>'} {refused}; it "
                "commits nothing until it has rejoined the group",
                ErrorCode.ILLEGAL_GENERATION,
                retriable=False,
            )
        try:
            await self._coordinator.retrying(
                lambda: self._coordinator.commit(
                    generation=session.generation, member_id=session.member_id, offsets=offsets
                ),
                within=self._timeout,
            )
        except CoordinatorUnavailable as exc:
            raise CommitFailedError(str(exc), exc.code, retriable=True) from exc
        except (RebalanceInProgress, MemberFenced) as exc:
            raise self._rejected(session, exc) from exc
        except GroupError as exc:
            raise CommitFailedError(str(exc), exc.code, retriable=False) from exc

    async def committed(
        self, partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offsets (None where nothing is committed)."""
        return await self._coordinator.retrying(
            lambda: self._coordinator.fetch_committed(partitions), within=self._timeout
        )

    def _rejected(self, session: Session, exc: GroupError) -> CommitFailedError:
        mid_rebalance = session != self._stable_session()
        if isinstance(exc, MemberFenced) and not mid_rebalance:
            self._fenced(session, exc)
            advice = "the member was fenced: its partitions are lost and it rejoins"
        else:
            advice = "a rebalance is under way: commit again once it has completed"
        level = logging.INFO if mid_rebalance else logging.WARNING
        logger.log(level, "group %s: commit rejected: %s; %s", self._group, exc, advice)
        retriable = isinstance(exc, RebalanceInProgress) or mid_rebalance
        return CommitFailedError(f"{exc}; {advice}", exc.code, retriable=retriable)
