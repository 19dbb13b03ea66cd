"""The test driver runs an app's whole topology: records piped into a topic a `key_by` reads are
re-keyed through the repartition topic and joined, a join's output read by another join is
joined again, and a key function that fails makes a dead letter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.errors import ConfigurationError
from streamjoin.runtime.output.dead_letters import BadRecordError
from streamjoin.testing import TestDriver

WINDOW = JoinWindows(before=0, after=100, grace=10)


@dataclass
class Click:
    click_id: str
    auction_id: str | None
    bot: bool = False


@dataclass
class Conversion:
    conversion_id: str
    auction_id: str
    amount: int


def attribute(impression: dict[str, Any], click: Click | None) -> dict[str, Any]:
    return {"auction": impression["auction"], "click": click.click_id if click else None}


def attribution_app(*, rekeyed: bool, how: str = "left", **settings_: Any) -> App:
    """impressions x clicks; the clicks keyed by click id and re-keyed (rekeyed), or already
    keyed by auction id."""
    app = App("ads", **settings_)
    impressions = app.topic("impressions", partitions=3)
    clicks = app.topic("clicks", value_type=Click, partitions=2 if rekeyed else 3)
    stream: Any = clicks.key_by(lambda c: c.auction_id) if rekeyed else clicks
    app.join(impressions, stream, window=WINDOW, how=how, into="attributed")(  # type: ignore[arg-type]
        attribute
    )
    return app


def test_piping_a_click_produces_the_rekeyed_record_and_the_join() -> None:
    with TestDriver(attribution_app(rekeyed=True)) as driver:
        driver.pipe("impressions", {"auction": "a1"}, key="a1", timestamp=1_000)
        driver.pipe("clicks", Click("c1", "a1"), key="c1", timestamp=1_050)
        [rekeyed] = driver.read_output("ads-attribute-right-repartition")
        assert (rekeyed.key, rekeyed.value, rekeyed.timestamp) == ("a1", Click("c1", "a1"), 1_050)
        [joined] = driver.read_output("attributed")
        assert (joined.key, joined.value, joined.timestamp) == (
            "a1",
            {"auction": "a1", "click": "c1"},
            1_050,
        )
        assert driver.partition_count("ads-attribute-right-repartition") == 3


records = st.lists(
    st.tuples(
        st.booleans(),  # an impression (else a click)
        st.sampled_from(["a1", "a2", "a3", "a4", "a5"]),
        st.integers(min_value=0, max_value=400),  # timestamp
    ),
    max_size=40,
)


@settings(max_examples=30, deadline=None)
@given(records=records, how=st.sampled_from(["inner", "left", "outer"]))
def test_a_rekeyed_join_equals_the_join_of_prekeyed_data(
    records: list[tuple[bool, str, int]], how: str
) -> None:
    outputs = []
    for rekeyed in (False, True):
        with TestDriver(attribution_app(rekeyed=rekeyed, how=how)) as driver:
            for n, (impression, auction, timestamp) in enumerate(records):
                if impression:
                    driver.pipe(
                        "impressions", {"auction": auction}, key=auction, timestamp=timestamp
                    )
                else:
                    click = Click(f"c{n}", auction)
                    key = click.click_id if rekeyed else auction
                    driver.pipe("clicks", click, key=key, timestamp=timestamp)
            driver.advance_stream_time(10_000)
            outputs.append(
                sorted(
                    (r.key, r.timestamp, sorted(r.value.items(), key=str))
                    for r in driver.read_output("attributed")
                )
            )
    assert outputs[0] == outputs[1]


def auction_of(click: Click) -> str | None:
    if click.click_id.startswith("!"):
        raise ValueError(f"malformed click id {click.click_id!r}")
    return click.auction_id


def three_way_app(**settings_: Any) -> App:
    """impressions x clicks (filtered, re-keyed by auction) -> attributed x conversions
    (re-keyed by the field auction_id) -> revenue."""
    app = App("ads", **settings_)
    impressions = app.topic("impressions", partitions=2)
    clicks = app.topic("clicks", value_type=Click)
    conversions = app.topic("conversions", value_type=Conversion)
    attributed = app.topic("attributed")
    humans = clicks.filter(lambda c: not c.bot).key_by(auction_of)
    app.join(impressions, humans, window=WINDOW, how="left", into=attributed)(attribute)

    @app.join(
        attributed,
        conversions.key_by("auction_id"),
        window=JoinWindows(before=0, after=1_000),
        into="revenue",
    )
    def revenue(attribution: dict[str, Any], conversion: Conversion) -> dict[str, Any]:
        return {**attribution, "amount": conversion.amount}

    return app


def test_a_chained_three_way_join() -> None:
    with TestDriver(three_way_app()) as driver:
        driver.pipe("impressions", {"auction": "a1"}, key="a1", timestamp=1_000)
        driver.pipe("impressions", {"auction": "a2"}, key="a2", timestamp=1_000)
        driver.pipe("clicks", Click("c1", "a1"), key="c1", timestamp=1_010)
        driver.pipe("clicks", Click("c2", "a2", bot=True), key="c2", timestamp=1_020)
        driver.pipe("conversions", Conversion("v1", "a1", 30), key="v1", timestamp=1_500)
        driver.pipe("conversions", Conversion("v2", "a2", 5), key="v2", timestamp=1_600)
        assert [r.value for r in driver.read_output("ads-attribute-right-repartition")] == [
            Click("c1", "a1")
        ]
        assert [(r.key, r.value) for r in driver.read_output("revenue")] == [
            ("a1", {"auction": "a1", "click": "c1", "amount": 30})
        ]
        # a2's bot click was filtered out: its left non-match is emitted once the window
        # closes, and joins its conversion then.
        driver.advance_stream_time(2_000)
        assert [(r.key, r.value) for r in driver.read_output("revenue")] == [
            ("a2", {"auction": "a2", "click": None, "amount": 5})
        ]


def test_filter_and_map_values_run_in_the_join_task() -> None:
    app = App("ads")
    impressions, clicks = app.topic("impressions"), app.topic("clicks", value_type=Click)
    ids = clicks.filter(lambda c: not c.bot).map_values(lambda c: c.click_id, value_type=str)
    app.join(impressions, ids, window=WINDOW, into="out", name="j")(lambda i, c: [i, c])
    with TestDriver(app) as driver:
        driver.pipe("impressions", "i", key="a1", timestamp=1)
        driver.pipe("clicks", Click("c1", "a1", bot=True), key="a1", timestamp=2)
        driver.pipe("clicks", Click("c2", "a1"), key="a1", timestamp=3)
        assert [r.value for r in driver.read_output("out")] == [["i", "c2"]]
        assert [r.value for r in driver.read_output("clicks")] == []  # nothing re-written


@pytest.mark.parametrize(
    ("click", "error"),
    [
        (Click("c1", None), b"key_by(auction_of) returned None"),
        (Click("!c1", "a1"), b"key_by(auction_of) raised ValueError: malformed click id '!c1'"),
    ],
)
def test_a_key_function_that_fails_sends_the_record_to_the_dead_letter_topic(
    click: Click, error: bytes
) -> None:
    with TestDriver(three_way_app()) as driver:
        raw = driver.app.joins[0].right.value_serde.serialize(click)
        driver.pipe_raw("clicks", raw, key=b"c1", timestamp=5)
        driver.pipe("clicks", Click("c2", "a1"), key="c2", timestamp=6)
        [dead] = driver.dead_letters()
        meta = dict(dead.headers)
        assert (dead.key, dead.value) == (b"c1", raw)
        assert meta["streamjoin.source.topic"] == b"clicks"
        assert meta["streamjoin.join"] == b"attribute"
        assert error in meta["streamjoin.error.message"]
        assert [r.key for r in driver.read_output("ads-attribute-right-repartition")] == ["a1"]


def test_a_failing_key_function_stops_the_app_under_on_error_fail() -> None:
    with (
        TestDriver(three_way_app(on_error="fail")) as driver,
        pytest.raises(BadRecordError, match="key_by\\(auction_of\\) returned None"),
    ):
        driver.pipe("clicks", Click("c1", None), key="c1", timestamp=5)


def test_a_key_of_the_wrong_type_is_a_bad_record_naming_key_type() -> None:
    app = App("ads")
    impressions, clicks = app.topic("impressions"), app.topic("clicks")
    by_number = clicks.key_by(lambda c: c["n"])
    app.join(impressions, by_number, window=WINDOW, into="out", name="j")(lambda i, c: i)
    with TestDriver(app) as driver:
        driver.pipe("clicks", {"n": 7}, key="c1", timestamp=1)
        [dead] = driver.dead_letters()
        message = dict(dead.headers)["streamjoin.error.message"]
        assert b"returned a key of type int, which its str key serde cannot encode" in message
        assert b"pass key_type= to key_by" in message


def test_the_driver_refuses_a_cycle() -> None:
    app = App("ads")
    x, y = app.topic("x"), app.topic("y")
    app.join(x, y, window=WINDOW, into="z", name="one")(lambda a, b: a)
    app.join(app.topic("z"), app.topic("w"), window=WINDOW, into=y, name="two")(lambda a, b: a)
    with pytest.raises(ConfigurationError, match="the joins form a cycle"):
        TestDriver(app)
