"""Bounded exponential backoff with jitter for retrying coordinator requests.

Bounded so that a member never waits longer than `maximum` between attempts (a coordinator that
comes back is found quickly); jittered so that members failing together do not retry in lockstep.
"""

from __future__ import annotations

import random

__all__ = ("Backoff",)


class Backoff:
    """Delays of initial, initial*2, ... capped at maximum, each jittered by +-`jitter`."""

    __slots__ = ("_attempts", "initial", "jitter", "maximum")

    def __init__(self, initial: float = 0.1, maximum: float = 2.0, jitter: float = 0.2) -> None:
        if not 0 < initial <= maximum:
            raise ValueError(f"backoff needs 0 < initial ({initial}) <= maximum ({maximum})")
        if not 0 <= jitter < 1:
            raise ValueError(f"backoff jitter {jitter} must be in [0, 1)")
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        self._attempts = 0

    @property
    def attempts(self) -> int:
        """Failures since the last reset."""
        return self._attempts

    def next_delay(self) -> float:
        """The delay before the next attempt; each call counts one more failure."""
        base = min(self.maximum, self.initial * (1 << min(self._attempts, 32)))
        self._attempts += 1
        spread = base * self.jitter
        return min(self.maximum, max(0.0, base + random.uniform(-spread, spread)))

    def reset(self) -> None:
        """Forget past failures (after a success)."""
        self._attempts = 0
