"""Joins and key_bys reading a common topic are one sub-topology (Kafka Streams' node groups):
the groups are the connected components of the readers of each topic."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.dsl.topology import compile_topology, subtopology_groups
from streamjoin.errors import ConfigurationError
from streamjoin.query.service import QueryService
from streamjoin.query.stores import task_of
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId

WINDOW = JoinWindows.of(10)


def joiner(left: Any, right: Any) -> Any:
    return left


def shop() -> App:
    """pay and refund read orders; refund's refunds are re-keyed; audit reads alone."""
    app = App("shop")
    orders, payments, refunds = app.topic("orders"), app.topic("payments"), app.topic("refunds")
    app.join(orders, payments, window=WINDOW, into="paid", name="pay")(joiner)
    app.join(orders, refunds.key_by("order"), window=WINDOW, into="refunded", name="refund")(joiner)
    app.join(app.topic("a"), app.topic("b"), window=WINDOW, into="audited", name="audit")(joiner)
    return app


def test_joins_reading_one_topic_are_one_sub_topology_and_the_others_keep_their_names() -> None:
    app = shop()
    assert subtopology_groups(app) == (("audit",), ("pay", "refund"), ("refund-right-repartition",))
    topology = AppTopology(app, {"audit": 2, "pay": 4, "refund": 4, "refund-right-repartition": 3})
    assert topology.names == ("audit", "pay.refund", "refund-right-repartition")
    assert topology.inputs("pay.refund") == ("orders", "payments", "shop-refund-right-repartition")
    spec = topology.task_spec(TaskId("pay.refund", 1))
    assert spec.task_id == "pay.refund_1" and spec.partition_count == 4
    assert {s.name for s in spec.stores} == {"pay-left", "pay-right", "refund-left", "refund-right"}
    assert topology.partitions["pay"] == 4  # stores are still found by their join's name


def test_a_join_named_like_a_merged_sub_topology_is_refused() -> None:
    app = shop()
    app.join(app.topic("c"), app.topic("d"), window=WINDOW, into="x", name="pay.refund")(joiner)
    with pytest.raises(ConfigurationError, match=r"'pay.refund' names a join .* rename it"):
        subtopology_groups(app)


def test_sharing_is_transitive_through_key_bys_and_repartition_topics() -> None:
    """A key_by reading orders joins the group; two joins reading one re-keyed topic too."""
    app = App("t")
    orders, clicks = app.topic("orders"), app.topic("clicks")
    by_user = clicks.key_by("user", name="by-user")
    app.join(orders, app.topic("x"), window=WINDOW, into="o1", name="j1")(joiner)
    app.join(app.topic("y"), orders.key_by("user", name="orders-by-user"), window=WINDOW,
             into="o2", name="j2")(joiner)  # fmt: skip
    app.join(app.topic("z"), by_user, window=WINDOW, into="o3", name="j3")(joiner)
    app.join(app.topic("w"), by_user, window=WINDOW, into="o4", name="j4")(joiner)
    assert subtopology_groups(app) == (
        ("j1", "orders-by-user-repartition"),
        ("j2",),
        ("j3", "j4"),
        ("by-user-repartition",),
    )


def test_a_merged_sub_topology_needs_one_partition_count_in_one_line() -> None:
    app = App("shop")
    orders = app.topic("orders")
    app.join(orders, app.topic("payments"), window=WINDOW, into="paid", name="pay")(joiner)
    refunds = app.topic("refunds").key_by("order", partitions=3)
    app.join(orders, refunds, window=WINDOW, into="refunded", name="refund")(joiner)
    assert compile_topology(app, {"orders": 3, "payments": 3, "refunds": 5}).groups[0] == (
        "pay",
        "refund",
    )
    with pytest.raises(ConfigurationError) as refused:
        compile_topology(app, {"orders": 2, "payments": 2, "refunds": 5})
    assert str(refused.value) == (
        "join 'refund': inputs are not co-partitioned: 'orders' has 2 partitions, "
        "'shop-refund-right-repartition' (written by key_by 'refund-right') has 3; give both "
        "the same partition count and partition them by the same key"
    )


@st.composite
def apps(draw: st.DrawFn) -> App:
    """Joins over a few topics, some sides re-keyed (a key_by per join side, named by it)."""
    app = App("gen")
    topics = [app.topic(f"t{i}") for i in range(draw(st.integers(2, 6)))]
    for j in range(draw(st.integers(1, 6))):
        pick = st.integers(0, len(topics) - 1)
        left, right = (topics[i] for i in draw(st.lists(pick, min_size=2, max_size=2, unique=True)))
        right_input = right.key_by("k", name=f"j{j}-right") if draw(st.booleans()) else right
        app.join(left, right_input, window=WINDOW, into=f"out{j}", name=f"j{j}")(joiner)
    return app


@given(apps())
def test_groups_are_the_connected_components_of_the_readers_of_each_topic(app: App) -> None:
    groups = subtopology_groups(app)
    units = {spec.name: set(spec.input_topics) for spec in app.joins}
    units |= {r.subtopology: {r.source.name} for r in app.repartitions}
    members = [m for group in groups for m in group]
    assert sorted(members) == sorted(units)  # each join / key_by in exactly one
    reads = [set().union(*(units[m] for m in group)) for group in groups]
    every = [t for topics in reads for t in topics]
    assert len(every) == len(set(every))  # each source topic in exactly one sub-topology
    for group in groups:  # and each sub-topology connected through the topics it reads
        reached, frontier = {group[0]}, [group[0]]
        while frontier:
            topics = units[frontier.pop()]
            for other in group:
                if other not in reached and units[other] & topics:
                    reached.add(other)
                    frontier.append(other)
        assert reached == set(group)


@given(apps())
def test_without_shared_topics_names_and_numbers_stay_as_they_were(app: App) -> None:
    """Task ids of apps where no two read one topic are unchanged: users keep their state."""
    units = [spec.name for spec in sorted(app.joins, key=lambda s: s.name)]
    units += [r.subtopology for r in app.repartitions]
    inputs = [t for spec in app.joins for t in spec.input_topics]
    inputs += [r.source.name for r in app.repartitions]
    groups = subtopology_groups(app)
    if len(inputs) == len(set(inputs)):
        assert groups == tuple((u,) for u in units)
    else:
        assert len(groups) < len(units)
    firsts = [group[0] for group in groups]
    assert firsts == sorted(firsts, key=units.index)


def test_a_query_of_a_merged_join_s_store_is_routed_to_the_merged_task() -> None:
    """Interactive queries find a key's task by sub-topology: a store of `pay` lives in the tasks
    of `pay.refund`, where the key's partition of orders is."""
    topology = AppTopology(
        shop(), {"audit": 2, "pay": 4, "refund": 4, "refund-right-repartition": 3}
    )
    service = QueryService(topology, state=None, assignment=lambda: None, forward=None)  # type: ignore[arg-type]
    assert topology.subtopology_of("refund") == "pay.refund"
    assert service.stores["pay-left"].subtopology == "pay.refund"
    assert task_of(service.stores["audit-right"], b"k", 2).subtopology == "audit"
