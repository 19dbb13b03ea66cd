"""Whether the broker still answers, and still has the topics the worker was started with.

Busy and idle workers see a lost broker differently (a busy one's sends fail, an idle one's
fetches just retry), so the worker watches it one way for both: a metadata request every few
seconds through its producer's client. It says once that the broker is gone and once that it is
back, holds back the client libraries' per-attempt complaints (`OutageLogFilter`), and gives
up with one line after `give_up_after_s`. The same answer shows whether the input topics
are still there with the partition counts the tasks were built for: a broker that came back
empty, or a deleted topic, stops the worker as it would have refused to start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiokafka.errors import KafkaError

from streamjoin.errors import StreamJoinError

__all__ = ("BrokerUnavailableError", "BrokerWatch", "OutageLogFilter")

logger = logging.getLogger(__name__)

_REPEAT_AFTER_S = 60.0
_QUIETED = (
    "aiokafka",
    "streamjoin.group",
    "streamjoin.state",
    "streamjoin.runtime.output.producer_sink",
    "streamjoin.runtime.process.slow_commit",
)


class BrokerUnavailableError(StreamJoinError):
    """The broker did not answer for longer than the worker may wait."""


class OutageLogFilter(logging.Filter):
    """Kafka clients and the group member log a warning or an error on every retry (thousands a
    minute without a broker): each such message is let through once a minute, and none while
    the broker is known to be down; the rest are counted."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.down = False
        self.held_back = 0
        self._clock = clock
        self._last_seen: dict[tuple[str, object], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.levelno >= logging.CRITICAL:
            return True
        if not record.name.startswith(_QUIETED):
            return True
        now, key = self._clock(), (record.name, record.msg)
        last = self._last_seen.get(key)
        if self.down or (last is not None and now - last < _REPEAT_AFTER_S):
            self.held_back += 1
            return False
        self._last_seen[key] = now
        return True

    @contextmanager
    def installed(self) -> Iterator[OutageLogFilter]:
        """On every handler of the root logger (where the records end up), while in use."""
        handlers = list(logging.getLogger().handlers)
        for handler in handlers:
            handler.addFilter(self)
        try:
            yield self
        finally:
            for handler in handlers:
                handler.removeFilter(self)


class BrokerWatch:
    def __init__(
        self,
        client: Any,
        bootstrap: str,
        *,
        give_up_after_s: float,
        check_topics: Callable[[dict[str, int]], None],
        interval_s: float = 2.0,
        answer_within_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`client`: an aiokafka client of the worker's; `check_topics(counts)` raises a
        ConfigurationError when the topics (name -> partition count) no longer fit the app."""
        self._client = client
        self._bootstrap = bootstrap
        self._give_up_after = give_up_after_s
        self._check_topics = check_topics
        self._interval = interval_s
        self._answer_within = answer_within_s
        self._clock = clock
        self.lost_since: float | None = None
        self.verdict: StreamJoinError | None = None
        """Why the worker cannot go on, once `run` has raised it."""
        self.quiet = OutageLogFilter()

    async def run(self) -> None:
        """Look every few seconds until the broker is gone for too long or its topics no longer
        fit: then raise (BrokerUnavailableError, ConfigurationError)."""
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.look()
            except StreamJoinError as exc:
                self.verdict = exc
                self.quiet.down = True  # closing: the clients' complaints add nothing now
                raise

    async def look(self) -> None:
        """One look: note the broker's state, and raise if the worker cannot go on."""
        counts, cause = await self._topic_counts()
        now = self._clock()
        if counts is not None:
            self._reachable(now)
            self._check_topics(counts)
            return
        if self.lost_since is None:
            self.lost_since = now
            self.quiet.down = True
            logger.warning(
                "broker at %s does not answer (%s); reconnecting, and giving up after %.0f s "
                "(--broker-unavailable-timeout)",
                self._bootstrap,
                cause,
                self._give_up_after,
            )
        elif now - self.lost_since > self._give_up_after:
            raise BrokerUnavailableError(
                f"broker at {self._bootstrap} has not answered for {now - self.lost_since:.0f} s "
                f"(last: {cause}); check that it is running and reachable, or raise "
                "--broker-unavailable-timeout"
            )

    def _reachable(self, now: float) -> None:
        if self.lost_since is None:
            return
        held_back, self.quiet.held_back = self.quiet.held_back, 0
        self.quiet.down = False
        logger.warning(
            "broker at %s answers again after %.0f s (%d client log lines held back meanwhile)",
            self._bootstrap,
            now - self.lost_since,
            held_back,
        )
        self.lost_since = None

    async def _topic_counts(self) -> tuple[dict[str, int] | None, str]:
        """Partition count of every topic, or None and why the broker did not say."""
        try:
            cluster = await asyncio.wait_for(self._client.fetch_all_metadata(), self._answer_within)
        except TimeoutError:
            return None, f"no answer within {self._answer_within:.0f} s"
        except (KafkaError, OSError) as exc:
            return None, str(exc) or type(exc).__name__
        return {
            topic: len(cluster.partitions_for_topic(topic) or ())
            for topic in cluster.topics(exclude_internal_topics=True)
        }, ""
