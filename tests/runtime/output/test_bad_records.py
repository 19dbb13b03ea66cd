"""Bad records go to the dead-letter topic with their source, or stop the worker on request."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin import App, JoinWindows
from streamjoin.runtime.output.dead_letters import BadRecordError
from streamjoin.testing import TestDriver


def make(on_error: str = "dlq", joiner: Any = None) -> TestDriver:
    app = App("bad", on_error=on_error)
    left, right = app.topic("L"), app.topic("R")

    def default(left_value: Any, right_value: Any) -> Any:
        return [left_value, right_value]

    window = JoinWindows(before=10, after=10)
    app.join(left, right, window=window, into="out", name="j")(joiner or default)
    return TestDriver(app)


def headers(record: Any) -> dict[str, bytes]:
    return dict(record.headers)


def test_undecodable_value_goes_to_the_dead_letter_topic_and_processing_goes_on() -> None:
    with make() as driver:
        driver.pipe_raw("L", b"{not json", key=b"k", timestamp=100)
        driver.pipe("L", "good", key="k", timestamp=101)
        driver.pipe("R", "r", key="k", timestamp=102)
        [dead] = driver.dead_letters()
        assert dead.topic == "bad-dlq"
        assert (dead.key, dead.value) == (b"k", b"{not json")
        meta = headers(dead)
        assert meta["streamjoin.source.topic"] == b"L"
        assert meta["streamjoin.source.offset"] == b"0"
        assert meta["streamjoin.error.class"] == b"SerdeError"
        assert b"not JSON" in meta["streamjoin.error.message"]
        assert [r.value for r in driver.read_output("out")] == [["good", "r"]]


def test_key_that_does_not_decode_is_a_bad_record() -> None:
    with make() as driver:
        driver.pipe_raw("L", b'"v"', key=b"\xff\xfe", timestamp=100)
        [dead] = driver.dead_letters()
        assert b"not UTF-8" in headers(dead)["streamjoin.error.message"]


def test_negative_timestamp_is_a_bad_record() -> None:
    with make() as driver:
        driver.pipe("L", "v", key="k", timestamp=-1)
        [dead] = driver.dead_letters()
        assert b"invalid timestamp" in headers(dead)["streamjoin.error.message"]


def test_a_raising_joiner_sends_its_left_record_to_the_dead_letter_topic() -> None:
    def explode(left_value: Any, right_value: Any) -> Any:
        raise ZeroDivisionError("boom")

    with make(joiner=explode) as driver:
        driver.pipe("L", "l", key="k", timestamp=100)
        driver.pipe("R", "r", key="k", timestamp=100)
        [dead] = driver.dead_letters()
        assert dead.value == b'"l"'
        assert headers(dead)["streamjoin.error.class"] == b"ZeroDivisionError"
        assert headers(dead)["streamjoin.source.topic"] == b"L"


def test_on_error_fail_stops_with_the_same_message() -> None:
    with (
        make(on_error="fail") as driver,
        pytest.raises(
            BadRecordError, match=r"join 'j': bad record at L\[0\]@0: SerdeError: not JSON"
        ),
    ):
        driver.pipe_raw("L", b"{not json", key=b"k", timestamp=100)
