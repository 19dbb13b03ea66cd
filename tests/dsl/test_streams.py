"""Streams made from topics: filter, map_values and key_by compose, and what the joins that read
them see (the topic their tasks read, the steps those tasks run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from streamjoin import App, JoinWindows
from streamjoin.dsl.steps import Filter, KeyBy, MapValues, StepChain, StepError
from streamjoin.dsl.topics import Stream
from streamjoin.errors import ConfigurationError


@dataclass
class Click:
    click_id: str
    auction_id: str
    bot: bool = False


def joiner(left: Any, right: Any) -> Any:
    return left


def test_steps_compose_in_order_from_the_source_topic() -> None:
    app = App("ads")
    clicks = app.topic("clicks", value_type=Click)
    stream = clicks.filter(lambda c: not c.bot).map_values(lambda c: c).key_by("auction_id")
    assert isinstance(stream, Stream)
    assert stream.source is clicks
    assert [type(s) for s in stream.steps] == [Filter, MapValues, KeyBy]
    assert repr(stream).startswith("Stream('clicks').filter(")


def test_a_filtered_input_is_read_from_its_topic_with_the_steps_in_the_join_task() -> None:
    app = App("ads")
    impressions, clicks = app.topic("impressions"), app.topic("clicks", value_type=Click)
    humans = clicks.filter(lambda c: not c.bot)
    app.join(impressions, humans, window=JoinWindows.of(5), into="out")(joiner)
    [spec] = app.joins
    assert spec.input_topics == ("impressions", "clicks")
    assert spec.right_steps == humans.steps
    assert app.repartitions == ()


def test_key_by_reads_through_a_repartition_topic_named_after_the_join_and_side() -> None:
    app = App("ads")
    impressions, clicks = app.topic("impressions"), app.topic("clicks", value_type=Click)
    rekeyed = clicks.filter(lambda c: not c.bot).key_by(lambda c: c.auction_id)
    app.join(impressions, rekeyed.map_values(lambda c: c), window=JoinWindows.of(5), into="o")(
        joiner
    )
    [spec] = app.joins
    [repartition] = app.repartitions
    assert spec.right.name == "ads-joiner-right-repartition" == repartition.topic.name
    assert repartition.source is clicks
    assert [type(s) for s in repartition.steps] == [Filter]
    assert [type(s) for s in spec.right_steps] == [MapValues]
    assert repartition.subtopology == "joiner-right-repartition"
    assert repartition.topic.value_type is Click


def test_a_named_key_by_read_by_two_joins_is_one_repartition() -> None:
    app = App("ads")
    a, b, clicks = app.topic("a"), app.topic("b"), app.topic("clicks", value_type=Click)
    rekeyed = clicks.key_by("auction_id", name="by-auction", partitions=3)
    app.join(a, rekeyed, window=JoinWindows.of(5), into="o1", name="j1")(joiner)
    app.join(b, rekeyed, window=JoinWindows.of(5), into="o2", name="j2")(joiner)
    [repartition] = app.repartitions
    assert repartition.topic.name == "ads-by-auction-repartition"
    assert repartition.topic.partitions == 3
    other = clicks.key_by("click_id", name="by-auction")
    with pytest.raises(ConfigurationError, match="two different key_by steps are named"):
        app.join(a, other, window=JoinWindows.of(5), into="o3", name="j3")(joiner)


def test_two_key_bys_make_two_repartitions_one_after_the_other() -> None:
    app = App("ads")
    a, clicks = app.topic("a"), app.topic("clicks", value_type=Click)
    twice = clicks.key_by("click_id").key_by("auction_id")
    app.join(a, twice, window=JoinWindows.of(5), into="o", name="j")(joiner)
    first, second = sorted(app.repartitions, key=lambda r: r.source.name)
    assert first.source.name == "ads-j-right-0-repartition"
    assert second.source.name == "clicks"
    assert app.joins[0].right.name == first.topic.name


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda t: t.filter("x"), "filter takes a function"),
        (lambda t: t.map_values(3), "map_values takes a function"),
        (lambda t: t.key_by(""), "key_by takes a function of the value or a field name"),
        (lambda t: t.key_by("f", partitions=0), "partitions must be a positive int"),
    ],
)
def test_bad_steps_are_refused(make: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make(App("ads").topic("t"))


def test_tables_take_no_steps() -> None:
    with pytest.raises(ConfigurationError, match="table 't': key_by applies to streams"):
        App("ads").table("t").key_by("f")


def test_a_key_function_that_raises_or_returns_none_is_a_step_error() -> None:
    app = App("ads")
    by_field = app.topic("t", value_type=Click).key_by("auction_id")
    assert isinstance(by_field.step, KeyBy)
    assert by_field.step.key_of(Click("c", "a")) == "a"
    assert by_field.step.key_of({"auction_id": "b"}) == "b"
    with pytest.raises(StepError, match="returned None"):
        by_field.step.key_of({"other": 1})
    failing = app.topic("u").key_by(lambda v: v["missing"])
    assert isinstance(failing.step, KeyBy)
    with pytest.raises(StepError, match="raised KeyError: 'missing'"):
        failing.step.key_of({})


def test_a_step_chain_filters_maps_and_reencodes_only_when_a_map_ran() -> None:
    app = App("ads")
    topic = app.topic("t")
    stream = topic.filter(lambda v: v["n"] > 0).map_values(lambda v: {"n": v["n"] * 2})
    chain = StepChain(stream.steps, topic.value_serde, stream.value_serde)
    assert chain.apply(b'{"n":0}') == (False, None, b'{"n":0}')
    kept, value, raw = chain.apply(b'{"n":2}')
    assert (kept, value) == (True, {"n": 4})
    assert raw is not None and topic.value_serde.deserialize(raw) == {"n": 4}
    only_filter = StepChain(stream.steps[:1], topic.value_serde, topic.value_serde)
    assert only_filter.apply(b'{"n": 1}')[2] == b'{"n": 1}'
    with pytest.raises(StepError, match="filter"):
        chain.apply(b'{"m":1}')


def test_a_refused_join_leaves_its_key_by_name_free() -> None:
    app = App("ads")
    a, clicks = app.topic("a"), app.topic("clicks", value_type=Click)
    rekeyed = clicks.key_by("auction_id", name="by-auction")
    with pytest.raises(ConfigurationError, match="needs window"):
        app.join(a, rekeyed, into="o", name="j")(joiner)
    assert app.repartitions == ()
    app.join(a, clicks.key_by("click_id", name="by-auction"), window=JoinWindows.of(1), into="o")(
        joiner
    )
    [repartition] = app.repartitions
    assert repartition.key_by.key == "click_id"
