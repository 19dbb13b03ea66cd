"""The broker watch: one warning when the broker goes, one when it is back, client noise held
back meanwhile, one error line when it stays away too long or comes back without the topics."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError

from streamjoin import App, JoinWindows
from streamjoin.dsl.topology import compile_topology
from streamjoin.errors import ConfigurationError
from streamjoin.runtime.process.broker_watch import (
    BrokerUnavailableError,
    BrokerWatch,
    OutageLogFilter,
)
from streamjoin.runtime.topology.topic_check import check_running_topics


class Cluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self.counts)

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.counts[topic]))


class Client:
    """Answers metadata with `counts`, or fails while `down`."""

    def __init__(self) -> None:
        self.down = False
        self.hang = False
        self.counts = {"a": 2}

    async def fetch_all_metadata(self) -> Cluster:
        if self.hang:
            await asyncio.sleep(3600)
        if self.down:
            raise KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 1)]")
        return Cluster(self.counts)


def make(client: Client, clock: list[float], seen: list[dict[str, int]]) -> BrokerWatch:
    return BrokerWatch(
        client,
        "127.0.0.1:1",
        give_up_after_s=60,
        check_topics=seen.append,
        answer_within_s=0.05,
        clock=lambda: clock[0],
    )


async def test_one_warning_when_lost_one_when_back_and_the_noise_between_held_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, clock, seen = Client(), [0.0], []
    watch = make(client, clock, seen)
    await watch.look()
    assert seen == [{"a": 2}] and watch.lost_since is None
    client.down = True
    with caplog.at_level(logging.INFO), watch.quiet.installed():
        for t in range(1, 40):
            clock[0] = float(t)
            await watch.look()
        noisy = logging.getLogger("aiokafka.client")
        assert (
            watch.quiet.filter(noisy.makeRecord("aiokafka.client", 40, "", 0, "x", (), None))
            is False
        )
        client.down = False
        clock[0] = 45.0
        await watch.look()
    mine = [r.getMessage() for r in caplog.records if r.name.endswith("broker_watch")]
    assert len(mine) == 2
    assert "does not answer" in mine[0] and "giving up after 60 s" in mine[0]
    assert "answers again after 44 s (1 client log lines held back" in mine[1]
    assert watch.lost_since is None and not watch.quiet.down


async def test_gives_up_with_one_line_after_the_timeout() -> None:
    client, clock, seen = Client(), [0.0], []
    watch = make(client, clock, seen)
    client.hang = True  # a stalled broker: connected, but no answer
    await watch.look()
    clock[0] = 61.0
    with pytest.raises(BrokerUnavailableError) as raised:
        await watch.look()
    message = str(raised.value)
    assert "has not answered for 61 s" in message and "no answer within" in message
    assert "\n" not in message


async def test_a_broker_back_without_the_topics_stops_the_worker() -> None:
    app = App("watch")
    left, right = app.topic("L"), app.topic("R")
    app.join(left, right, window=JoinWindows(before=1, after=1), into="out", name="j")(
        lambda a, b: a
    )
    client, clock = Client(), [0.0]
    started = compile_topology(app, {"L": 2, "R": 2})
    watch = BrokerWatch(
        client,
        "127.0.0.1:1",
        give_up_after_s=60,
        check_topics=lambda counts: check_running_topics(app, counts, started),
        interval_s=0,
        clock=lambda: clock[0],
    )
    client.counts = {"L": 2, "R": 2, "out": 2}
    await watch.look()
    client.counts = {"R": 2, "out": 2}
    with pytest.raises(ConfigurationError, match=r"no longer has the app's topics 'L' \(deleted"):
        await watch.look()
    client.counts = {"L": 2, "R": 2}  # the output topic too: its sends would wait for it
    with pytest.raises(ConfigurationError, match=r"topics 'out' .*restart the workers"):
        await watch.look()
    assert watch.verdict is None, "only what `run` raised stops the worker"
    client.counts = {"L": 4, "R": 4, "out": 2}
    with pytest.raises(
        ConfigurationError, match="started with 2 partitions, its inputs now have 4"
    ):
        await watch.run()
    assert isinstance(watch.verdict, ConfigurationError)


def test_records_outside_the_client_libraries_pass_while_down() -> None:
    watch = make(Client(), [0.0], [])
    watch.quiet.down = True
    ours = logging.getLogger("streamjoin.runtime.process.worker").makeRecord(
        "streamjoin.runtime.process.worker", logging.WARNING, "", 0, "x", (), None
    )
    fatal: Any = logging.getLogger("aiokafka").makeRecord(
        "aiokafka", logging.CRITICAL, "", 0, "x", (), None
    )
    assert watch.quiet.filter(ours) and watch.quiet.filter(fatal)


def test_a_client_message_repeated_while_the_broker_is_up_shows_once_a_minute() -> None:
    clock = [0.0]
    quiet = OutageLogFilter(clock=lambda: clock[0])

    def record(message: str) -> logging.LogRecord:
        return logging.getLogger("aiokafka").makeRecord(
            "aiokafka", logging.ERROR, "", 0, message, ("node 1",), None
        )

    shown = []
    for second in range(0, 130, 2):
        clock[0] = float(second)
        shown.append(quiet.filter(record("Unable connect to node with id %s")))
    assert shown.count(True) == 3  # at 0, 60 and 120 s
    assert quiet.filter(record("Unable to update metadata from %s"))  # another message
