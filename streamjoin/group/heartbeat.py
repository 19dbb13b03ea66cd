"""The background heartbeat of a group member while it is stable in a generation.

Kept apart from the member so that it only observes and reports: it never changes the member's
state itself (the member's own task does, between rebalance steps), it tells the member that the
group is rebalancing, that the member was fenced, or that it cannot continue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from streamjoin.group.backoff import Backoff
from streamjoin.group.coordinator import GroupCoordinatorClient
from streamjoin.group.errors import (
    CoordinatorUnavailable,
    FatalGroupError,
    GroupError,
    MemberFenced,
    RebalanceInProgress,
)

__all__ = ("Heartbeat", "HeartbeatEvents", "Session")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Session:
    """The identity a heartbeat is sent for."""

    member_id: str
    generation: int


@dataclass(frozen=True, slots=True)
class HeartbeatEvents:
    """What the heartbeat reports to its member."""

    session: Callable[[], Session | None]
    """The current session, or None while the member is not stable (no heartbeat then)."""
    rebalance: Callable[[str], None]
    fenced: Callable[[Session, MemberFenced], None]
    fatal: Callable[[FatalGroupError], None]


class Heartbeat:
    """Sends a heartbeat every interval while the member is stable; runs until cancelled."""

    def __init__(
        self,
        coordinator: GroupCoordinatorClient,
        events: HeartbeatEvents,
        *,
        interval: float,
        session_timeout: float,
        backoff: Backoff,
    ) -> None:
        self._coordinator = coordinator
        self._events = events
        self._interval = interval
        self._session_timeout = session_timeout
        self._backoff = backoff
        self._wakeup = asyncio.Event()

    def wake(self) -> None:
        """The member became stable: beat now instead of at the end of the current interval."""
        self._wakeup.set()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), seconds)
        self._wakeup.clear()

    async def run(self) -> None:
        group = self._coordinator.group_id
        while True:
            session = self._events.session()
            if session is None:
                await self._sleep(self._interval)
                continue
            try:
                await self._coordinator.ensure_known()
                async with asyncio.timeout(self._session_timeout):
                    await self._coordinator.heartbeat(
                        generation=session.generation, member_id=session.member_id
                    )
            except RebalanceInProgress:
                self._events.rebalance("the coordinator reports a rebalance")
            except MemberFenced as exc:
                self._events.fenced(session, exc)
            except FatalGroupError as exc:
                self._events.fatal(exc)
                return
            except (CoordinatorUnavailable, TimeoutError) as exc:
                if isinstance(exc, TimeoutError):
                    self._coordinator.mark_dead("no heartbeat response within the session timeout")
                delay = self._backoff.next_delay()
                logger.warning(
                    "group %s: heartbeat failed (%s); retrying in %.2f s", group, exc, delay
                )
                await self._sleep(delay)
                continue
            except GroupError as exc:
                logger.warning("group %s: heartbeat failed: %s", group, exc)
            else:
                self._backoff.reset()
            await self._sleep(self._interval)
