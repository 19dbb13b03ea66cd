"""Watch how late the event loop runs its callbacks: heartbeats, fetches and commits share it
with processing, so a stall here is what gets a worker fenced out of its group."""

from __future__ import annotations

import asyncio
import logging
import time

__all__ = ("LoopMonitor",)

logger = logging.getLogger(__name__)


class LoopMonitor:
    def __init__(self, interval_s: float = 0.1, warn_after_s: float = 1.0) -> None:
        self._interval = interval_s
        self._warn_after = warn_after_s
        self.max_lag_s = 0.0
        """Largest delay seen since the last `reset_max`."""
        self.stalls = 0
        """Times the loop was late by more than `warn_after_s`."""

    async def run(self) -> None:
        while True:
            expected = time.monotonic() + self._interval
            await asyncio.sleep(self._interval)
            lag = time.monotonic() - expected
            self.max_lag_s = max(self.max_lag_s, lag)
            if lag > self._warn_after:
                self.stalls += 1
                logger.warning(
                    "the event loop stalled for %.1f s (heartbeats and fetches waited)", lag
                )

    def reset_max(self) -> float:
        seen, self.max_lag_s = self.max_lag_s, 0.0
        return seen
