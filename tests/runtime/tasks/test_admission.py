"""Records that may not enter a task (bad timestamps, no key where it cannot join, too large)
are dead letters refused before they take a place in the timestamp order."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from streamjoin import App, JoinWindows
from streamjoin.dsl.settings import DEFAULT_MAX_FUTURE_MS
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.records import JoinOutput, Side, SourceRecord
from streamjoin.runtime.output.dead_letters import BadRecordError
from streamjoin.runtime.output.sink import OutgoingRecord
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.testing import TestDriver

YEAR_3270 = 41_024_448_000_000


def make(**settings: Any) -> tuple[App, TestDriver]:
    app = App("ts", **settings)
    impressions, clicks = app.topic("impressions"), app.topic("clicks")

    @app.join(
        impressions,
        clicks,
        window=JoinWindows(before=0, after=1_000, grace=100),
        how="left",
        into="attributed",
        name="attribute",
    )
    def attribute(impression: Any, click: Any) -> Any:
        return {"impression": impression, "clicked": click is not None}

    return app, TestDriver(app)


def test_a_record_stamped_centuries_ahead_is_a_dead_letter_and_stream_time_stays() -> None:
    _, driver = make()
    with driver:
        driver.pipe("impressions", "i1", key="a", timestamp=10_000)
        driver.pipe("clicks", "bad clock", key="b", timestamp=YEAR_3270)
        driver.pipe("clicks", "c1", key="a", timestamp=10_500)  # a real click, not late
        out = driver.read_output("attributed")
        assert [r.value for r in out] == [{"impression": "i1", "clicked": True}]
        assert driver.counters("attribute").late == 0
        [dead] = driver.dead_letters()
        meta = dict(dead.headers)
        assert meta["streamjoin.error.class"] == b"InvalidTimestampError"
        assert b"max_future_ms=3600000" in meta["streamjoin.error.message"]
        assert b"3270" in meta["streamjoin.error.message"]
        # Brokers may refuse the far-future time too: the dead letter carries the refusal's.
        assert abs(dead.timestamp - time.time() * 1000) < 60_000
        assert dead.value == b'"bad clock"'


def test_the_bound_is_a_setting_and_a_record_within_it_is_processed() -> None:
    now = int(time.time() * 1000)
    _, driver = make(max_future_ms=10_000)
    with driver:
        driver.pipe("impressions", "near", key="a", timestamp=now + 5_000)
        driver.pipe("impressions", "far", key="b", timestamp=now + 60_000)
        assert [d.value for d in driver.dead_letters()] == [b'"far"']
        driver.advance_stream_time(now + 20_000)
        assert [r.value for r in driver.read_output("attributed")] == [
            {"impression": "near", "clicked": False}
        ]


def test_negative_timestamps_are_refused_on_either_side() -> None:
    _, driver = make()
    with driver:
        driver.pipe("impressions", "i", key="a", timestamp=-1)
        driver.pipe("clicks", "c", key="a", timestamp=-5)
        messages = [dict(d.headers)["streamjoin.error.message"] for d in driver.dead_letters()]
        assert all(b"invalid timestamp" in m for m in messages) and len(messages) == 2


def test_on_error_fail_stops_on_a_far_future_record() -> None:
    _, driver = make(on_error="fail")
    with driver, pytest.raises(BadRecordError, match="InvalidTimestampError: timestamp"):
        driver.pipe("clicks", "c", key="a", timestamp=YEAR_3270)


@dataclass
class Fetched:
    offset: int
    timestamp: int
    key: bytes | None = b"k"
    value: bytes | None = b'"v"'


class Recording:
    """A processor that only records what reached it."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.counters = JoinCounters()

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        self.seen.append(record.offset)
        return []

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        return []


class Sent(list[OutgoingRecord]):
    def send(self, record: OutgoingRecord) -> None:
        self.append(record)


def task_of(app: App) -> tuple[JoinTask, Recording, Sent]:
    processor, sent = Recording(), Sent()
    task = JoinTask(app.app_id, app.joins[0], TaskId("attribute", 0), processor, sent)  # type: ignore[arg-type]
    return task, processor, sent


def test_a_refused_record_counts_as_processed_only_after_what_was_buffered_before_it() -> None:
    app, _ = make()
    task, processor, sent = task_of(app)
    task.add(Side.RIGHT, [Fetched(0, 1_000), Fetched(1, YEAR_3270), Fetched(2, 1_200)])
    task.add(Side.RIGHT, [Fetched(3, -1)])
    assert len(sent) == 2 and processor.seen == []
    assert task.positions() == {}  # offsets 0 and 2 are not processed yet
    task.process(0, lambda _side: 0, budget=1)
    assert task.positions() == {Side.RIGHT: 1}
    task.process(0, lambda _side: 0)
    assert processor.seen == [0, 2]
    assert task.positions() == {Side.RIGHT: 4}  # 3 was refused after 2: now it is behind us


def test_a_refused_record_with_nothing_ahead_of_it_is_processed_at_once() -> None:
    app, _ = make()
    task, _, _ = task_of(app)
    task.add(Side.LEFT, [Fetched(7, YEAR_3270)])
    assert task.positions() == {Side.LEFT: 8}


def test_default_bound_is_an_hour() -> None:
    assert App("x").settings.max_future_ms == DEFAULT_MAX_FUTURE_MS == 3_600_000


def test_a_keyless_record_that_cannot_join_is_a_dead_letter_but_a_left_one_is_emitted() -> None:
    _, driver = make()
    with driver:
        driver.pipe("clicks", "c", key=None, timestamp=1_000)
        driver.pipe("impressions", "i", key=None, timestamp=1_000)
        [dead] = driver.dead_letters()
        assert dict(dead.headers)["streamjoin.source.topic"] == b"clicks"
        assert b"has no key" in dict(dead.headers)["streamjoin.error.message"]
        assert [r.value for r in driver.read_output("attributed")] == [
            {"impression": "i", "clicked": False}
        ]


def test_a_record_too_large_for_the_broker_is_a_dead_letter_without_its_value() -> None:
    _, driver = make(max_record_bytes=1_000)
    with driver:
        driver.pipe("impressions", "x" * 2_000, key="a", timestamp=1_000)
        driver.pipe("impressions", "fits", key="b", timestamp=1_001)
        [dead] = driver.dead_letters()
        meta = dict(dead.headers)
        assert dead.value is None and meta["streamjoin.omitted.bytes"] == b"2003"
        assert b"more than max_record_bytes=1000" in meta["streamjoin.error.message"]
        driver.advance_stream_time(10_000)
        assert [r.value["impression"] for r in driver.read_output("attributed")] == ["fits"]


def test_a_joined_value_too_large_for_the_broker_is_a_dead_letter() -> None:
    app = App("big", max_record_bytes=1_000)
    left, right = app.topic("L"), app.topic("R")

    @app.join(left, right, window=JoinWindows(before=10, after=10), into="out", name="j")
    def blow_up(left_value: Any, right_value: Any) -> Any:
        return left_value * 600

    with TestDriver(app) as driver:
        driver.pipe("L", "ab", key="k", timestamp=100)
        driver.pipe("R", "r", key="k", timestamp=100)
        [dead] = driver.dead_letters()
        assert dict(dead.headers)["streamjoin.error.class"] == b"RecordTooLargeError"
        assert dead.value == b'"ab"'
        assert driver.read_output("out") == []
