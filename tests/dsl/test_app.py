"""Declaring joins: what App accepts, and the precise refusal of what it cannot run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

import streamjoin
from streamjoin import App, JoinWindows
from streamjoin.errors import ConfigurationError


@dataclass
class Click:
    auction_id: str


def joiner(left: Any, right: Any) -> Any:
    return left


def test_join_decorator_records_a_plain_data_spec_and_returns_the_function() -> None:
    app = App("ads")
    impressions, clicks = app.topic("impressions"), app.topic("clicks", value_type=Click)
    window = JoinWindows(before=0, after=timedelta(minutes=1), grace=timedelta(seconds=5))
    decorated = app.join(impressions, clicks, window=window, how="left", into="out")(joiner)
    assert decorated is joiner
    [spec] = app.joins
    assert (spec.name, spec.how, spec.input_topics, spec.into.name) == (
        "joiner",
        "left",
        ("impressions", "clicks"),
        "out",
    )
    assert (spec.window.before_ms, spec.window.after_ms, spec.window.grace_ms) == (0, 60_000, 5_000)
    assert spec.window.retention_ms == 65_000
    assert not spec.is_stream_table
    assert app.get_join("joiner") is spec


def test_symmetric_window() -> None:
    window = JoinWindows.of(100, grace=7)
    assert (window.before_ms, window.after_ms, window.grace_ms) == (100, 100, 7)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": None}, "needs window=JoinWindows"),
        ({"how": "right"}, "how='right'; use one of inner, left, outer"),
        ({"into": "a"}, "output topic 'a' is also an input"),
    ],
)
def test_bad_stream_stream_joins_are_refused(kwargs: dict[str, Any], message: str) -> None:
    app = App("ads")
    a, b = app.topic("a"), app.topic("b")
    arguments: dict[str, Any] = {"window": JoinWindows.of(10), "how": "inner", "into": "out"}
    arguments.update(kwargs)
    with pytest.raises(ConfigurationError, match=message):
        app.join(a, b, **arguments)(joiner)


def test_stream_table_rules() -> None:
    app = App("ads")
    stream, table = app.topic("s"), app.table("t")
    with pytest.raises(ConfigurationError, match="inner or left, not outer"):
        app.join(stream, table, how="outer", into="o1")(joiner)
    with pytest.raises(ConfigurationError, match="takes no window"):
        app.join(stream, table, window=JoinWindows.of(5), into="o2")(joiner)
    with pytest.raises(ConfigurationError, match="left side must be a stream"):
        app.join(table, stream, into="o3")(joiner)
    app.join(stream, table, how="left", into="o4", name="enrich")(joiner)
    assert app.get_join("enrich").is_stream_table


def test_names_must_be_usable_in_topics_and_unique() -> None:
    with pytest.raises(ConfigurationError, match="app id 'my app'"):
        App("my app")
    app = App("ads")
    a, b = app.topic("a"), app.topic("b")
    app.join(a, b, window=JoinWindows.of(1), into="o")(joiner)
    with pytest.raises(ConfigurationError, match="declared twice"):
        app.join(a, b, window=JoinWindows.of(1), into="o2")(joiner)
    with pytest.raises(ConfigurationError, match="has no join 'nope' \\(joins: joiner\\)"):
        app.get_join("nope")
    with pytest.raises(ConfigurationError, match="both as a topic and as a table"):
        app.table("a")


def test_bad_settings_and_windows_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="unexpected keyword argument 'comit_interval_s'"):
        App("ads", comit_interval_s=1)
    with pytest.raises(ConfigurationError, match="JoinWindows after must not be negative"):
        JoinWindows(before=0, after=-1)
    with pytest.raises(ConfigurationError, match="milliseconds"):
        JoinWindows(before=0, after=1.5)  # type: ignore[arg-type]
    # Kafka Streams accepts it and never joins anything (its stores keep nothing).
    with pytest.raises(ConfigurationError, match=r"would join nothing.*give grace=1 or more"):
        JoinWindows.of(0)


def test_processing_guarantee_is_an_app_setting() -> None:
    joins = streamjoin.App("ads", processing_guarantee="exactly_once")  # as in docs/guarantees.md
    assert joins.settings.processing_guarantee == "exactly_once"
    assert App("ads").settings.processing_guarantee == "at_least_once"
    with pytest.raises(ConfigurationError, match="use at_least_once or exactly_once"):
        App("ads", processing_guarantee="exactly-once")
