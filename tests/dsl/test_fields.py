"""Declarative field mappings: evaluated with SQL's null rules on dicts, dataclasses and faust
Records; checked against the output topic when a join is declared; inspectable types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.dsl.fields import coalesce, declared_type, fields, left, lit, matched, right
from streamjoin.errors import ConfigurationError
from streamjoin.testing import TestDriver


@dataclass
class Click:
    auction: str
    ts: int
    price: float | None = None


@dataclass
class Attributed:
    auction: str
    delay: int | None


def test_a_mapping_reads_dicts_and_objects_and_builds_its_output() -> None:
    mapping = fields(
        auction=left("auction"),
        delay=right("ts") - left("meta.ts"),
        clicked=matched("right"),
        price=coalesce(right("price"), 0.0),
        source=lit("web"),
    )
    impression = {"auction": "a1", "meta": {"ts": 100}}
    assert mapping(impression, Click("a1", 130, 2.5)) == {
        "auction": "a1",
        "delay": 30,
        "clicked": True,
        "price": 2.5,
        "source": "web",
    }
    assert mapping(impression, None) == {
        "auction": "a1",
        "delay": None,
        "clicked": False,
        "price": 0.0,
        "source": "web",
    }


@given(
    st.one_of(st.none(), st.integers(-1000, 1000)),
    st.one_of(st.none(), st.integers(-1000, 1000)),
)
def test_arithmetic_is_null_when_either_side_is(a: int | None, b: int | None) -> None:
    result = fields(x=left("v") * 2 + right("v") - 1)({"v": a}, {"v": b})["x"]
    assert result == (None if a is None or b is None else a * 2 + b - 1)


def test_an_output_type_is_built_and_must_be_given_exactly() -> None:
    mapping = fields(Attributed, auction=left("auction"), delay=right("ts") - left("ts"))
    assert mapping({"auction": "a", "ts": 1}, {"ts": 4}) == Attributed("a", 3)
    with pytest.raises(ConfigurationError, match=r"exactly its fields \['auction', 'delay'\]"):
        fields(Attributed, auction=left("auction"))


def test_declared_types_come_from_annotations() -> None:
    assert declared_type(Click, "ts") is int
    assert declared_type(Click, "price") is float  # Optional unwrapped
    assert declared_type(Click, "missing") is None
    assert declared_type(dict, "ts") is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: left(""), "non-empty"),
        (lambda: left("a", list), "int, float, str or bool"),  # type: ignore[arg-type]
        (lambda: matched("middle"), "'left' or 'right'"),  # type: ignore[arg-type]
        (fields, "at least one output field"),
        (lambda: fields(x=left("a") + object()), "neither an expression"),  # type: ignore[operator]
    ],
)
def test_bad_mappings_say_what_is_wrong(make: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make()


def test_the_join_checks_the_mapping_against_its_output_topic() -> None:
    app = App("fields")
    a, b = app.topic("a"), app.topic("b")
    window = JoinWindows.of(10)
    with pytest.raises(ConfigurationError, match="needs a name"):
        app.join(a, b, window=window, into="o1")(fields(x=left("x")))
    typed = app.topic("o2", value_type=Attributed)
    with pytest.raises(ConfigurationError, match=r"build them with fields\(Attributed"):
        app.join(a, b, window=window, into=typed, name="j2")(fields(auction=left("a")))
    text = app.topic("o3", value_type=str)
    with pytest.raises(ConfigurationError, match="builds JSON objects"):
        app.join(a, b, window=window, into=text, name="j3")(fields(x=left("x")))


def test_the_worker_runs_a_mapping_as_its_joiner() -> None:
    app = App("fields-driver")
    impressions, clicks = app.topic("imp"), app.topic("clk", value_type=Click)
    app.join(
        impressions,
        clicks,
        window=JoinWindows(before=0, after=100),
        how="left",
        into=app.topic("out", value_type=Attributed),
        name="attribute",
    )(fields(Attributed, auction=left("auction"), delay=right("ts") - left("ts")))
    with TestDriver(app) as driver:
        driver.pipe("imp", {"auction": "a1", "ts": 10}, key="a1", timestamp=10)
        driver.pipe("clk", Click("a1", 40), key="a1", timestamp=40)
        driver.pipe("imp", {"auction": "a2", "ts": 20}, key="a2", timestamp=20)
        driver.advance_stream_time(1_000)
        assert [r.value for r in driver.read_output("out")] == [
            Attributed("a1", 30),
            Attributed("a2", None),
        ]
