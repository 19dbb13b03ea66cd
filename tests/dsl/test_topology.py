"""The topology compiler: join order, cycles refused, partition counts of repartition topics
and join outputs, and co-partitioning checked as the joins see their inputs."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin import App, JoinWindows
from streamjoin.dsl.topology import compile_topology, join_order
from streamjoin.errors import ConfigurationError

WINDOW = JoinWindows.of(10)


def joiner(left: Any, right: Any) -> Any:
    return left


def chained_app() -> App:
    """impressions x clicks (re-keyed) -> attributed x conversions (re-keyed) -> revenue."""
    app = App("ads")
    impressions, clicks = app.topic("impressions"), app.topic("clicks")
    conversions, attributed = app.topic("conversions"), app.topic("attributed")
    # Declared in reverse order: the compiler orders joins by data flow, not by declaration.
    app.join(attributed, conversions.key_by("auction"), window=WINDOW, into="revenue", name="a")(
        joiner
    )
    app.join(impressions, clicks.key_by("auction"), window=WINDOW, into=attributed, name="b")(
        joiner
    )
    return app


def test_joins_are_ordered_by_data_flow() -> None:
    assert [s.name for s in join_order(chained_app())] == ["b", "a"]


def test_repartition_topics_take_the_partition_count_of_the_other_input() -> None:
    topology = compile_topology(chained_app(), {"impressions": 6, "clicks": 2, "conversions": 3})
    assert topology.partitions["ads-b-right-repartition"] == 6
    assert topology.partitions["attributed"] == 6  # created as the join's task count
    assert topology.partitions["ads-a-right-repartition"] == 6
    assert topology.tasks == {
        "b": 6,
        "a": 6,
        "b-right-repartition": 2,
        "a-right-repartition": 3,
    }


def test_partitions_argument_wins_and_co_partitioning_is_checked_after_repartitioning() -> None:
    app = App("ads")
    a, b = app.topic("a"), app.topic("b")
    app.join(a, b.key_by("k", partitions=4), window=WINDOW, into="o", name="j")(joiner)
    with pytest.raises(
        ConfigurationError,
        match="join 'j': inputs are not co-partitioned: 'a' has 3 partitions, "
        "'ads-j-right-repartition' \\(written by key_by 'j-right'\\) has 4",
    ):
        compile_topology(app, {"a": 3, "b": 3})
    assert compile_topology(app, {"a": 4, "b": 9}).tasks["j-right-repartition"] == 9


def test_both_sides_rekeyed_take_the_larger_source_count() -> None:
    app = App("ads")
    a, b = app.topic("a"), app.topic("b")
    app.join(a.key_by("k"), b.key_by("k"), window=WINDOW, into="o", name="j")(joiner)
    topology = compile_topology(app, {"a": 2, "b": 5})
    assert topology.partitions["ads-j-left-repartition"] == 5
    assert topology.partitions["ads-j-right-repartition"] == 5


def test_missing_inputs_are_named_with_their_readers() -> None:
    with pytest.raises(ConfigurationError, match="key_by 'b-right': input topic 'clicks' does not"):
        compile_topology(chained_app(), {"impressions": 1, "conversions": 1})
    described = compile_topology(chained_app(), {}, require_sources=False)
    assert described.partitions["clicks"] is None
    assert described.partitions["ads-b-right-repartition"] is None


def test_declared_counts_must_match_the_broker() -> None:
    app = App("ads")
    a, b = app.topic("a", partitions=2), app.topic("b")
    app.join(a, b, window=WINDOW, into="o", name="j")(joiner)
    with pytest.raises(
        ConfigurationError, match="topic 'a' is declared with 2 partitions but has 3"
    ):
        compile_topology(app, {"a": 3, "b": 3})


def test_a_cycle_is_refused_naming_its_joins_and_topics() -> None:
    app = App("ads")
    x, y, z, w = (app.topic(n) for n in "xyzw")
    app.join(x, y, window=WINDOW, into=z, name="first")(joiner)
    app.join(z.key_by("k"), w, window=WINDOW, into=x, name="second")(joiner)
    with pytest.raises(ConfigurationError) as refused:
        compile_topology(app, {"y": 1, "w": 1})
    message = str(refused.value)
    assert "the joins form a cycle ('first' <- 'second' <- 'first')" in message
    assert "join 'second' writes 'x', read by join 'first'" in message
    assert (
        "join 'first' writes 'z' -> 'ads-second-left-repartition', read by join 'second'" in message
    )


def test_a_join_reading_its_own_output_through_a_key_by_is_a_cycle() -> None:
    app = App("ads")
    x, out = app.topic("x"), app.topic("out")
    app.join(x, out.key_by("k"), window=WINDOW, into=out, name="self")(joiner)
    with pytest.raises(ConfigurationError, match="cycle \\('self' <- 'self'\\)"):
        join_order(app)


def test_a_join_named_like_a_repartition_sub_topology_is_refused() -> None:
    app = App("ads")
    a, b, c = app.topic("a"), app.topic("b"), app.topic("c")
    app.join(a, b.key_by("k", name="j"), window=WINDOW, into="o", name="x")(joiner)
    app.join(a, c, window=WINDOW, into="o2", name="j-repartition")(joiner)
    with pytest.raises(ConfigurationError, match="has the name of the sub-topology of key_by 'j'"):
        compile_topology(app, {"a": 1, "b": 1, "c": 1})
