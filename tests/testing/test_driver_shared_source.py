"""Two joins reading one topic: one sub-topology (its task runs both, each with its stores), and
each join still gives its own results - a stream read by a windowed join and by a key_by feeding
a stream-table join, and a table read by two stream-table joins."""

from __future__ import annotations

from typing import Any

from streamjoin import App, JoinWindows
from streamjoin.cli.describe import render
from streamjoin.runtime.topology.description import describe_topology
from streamjoin.testing import TestDriver

WINDOW = JoinWindows(before=0, after=100, grace=10)


def shop() -> App:
    app = App("shop")
    orders = app.topic("orders", partitions=2)
    payments = app.topic("payments", partitions=2)
    countries = app.table("countries", partitions=2)

    @app.join(orders, payments, window=WINDOW, into="paid", name="pay")
    def pay(order: dict[str, Any], payment: dict[str, Any]) -> dict[str, Any]:
        return {"order": order["id"], "paid": payment["amount"]}

    @app.join(orders.key_by("country"), countries, into="located", name="locate")
    def locate(order: dict[str, Any], country: dict[str, Any]) -> dict[str, Any]:
        return {"order": order["id"], "region": country["region"]}

    return app


def test_a_stream_read_by_a_join_and_a_key_by_feeds_both_joins() -> None:
    with TestDriver(shop()) as driver:
        assert driver.topology.groups == (("locate",), ("pay", "locate-left-repartition"))
        driver.pipe("countries", {"region": "EU"}, key="NL", timestamp=1)
        for n in range(6):
            order = {"id": f"o{n}", "country": "NL"}
            driver.pipe("orders", order, key=f"o{n}", timestamp=10 + n)
            driver.pipe("payments", {"amount": n}, key=f"o{n}", timestamp=20 + n)
        paid = sorted((r.key, r.value["paid"]) for r in driver.read_output("paid"))
        assert paid == [(f"o{n}", n) for n in range(6)]
        located = sorted(r.value["order"] for r in driver.read_output("located"))
        assert located == [f"o{n}" for n in range(6)]


def test_describe_shows_the_merged_sub_topology_with_both_readers_of_the_stream() -> None:
    with TestDriver(shop()) as driver:
        described = describe_topology(driver.topology)
    merged = described["subtopologies"][1]
    assert (merged["kind"], merged["tasks"], merged["stateless"]) == ("merged", 2, False)
    assert [m["name"] for m in merged["members"]] == ["pay", "locate-left-repartition"]
    assert [(s["topic"], [r["member"] for r in s["read_as"]]) for s in merged["sources"]] == [
        ("orders", ["pay", "locate-left-repartition"]),
        ("payments", ["pay"]),
    ]
    text = render(described)
    assert "  Sub-topology 1: pay.locate-left-repartition (2 tasks)\n" in text
    assert "    Source: orders (2 partitions) [left of pay, locate-left-repartition]\n" in text
    assert "    Processor: pay: inner windowed stream-stream join" in text
    assert "    Processor: locate-left-repartition: key_by('country')\n" in text
    assert "    Sink: shop-locate-left-repartition (2 partitions) --> Sub-topology 0" in text
    assert "  Sub-topology 0: locate (2 tasks)\n    Source: shop-locate-left-repartition" in text


def test_a_table_read_by_two_joins_serves_both() -> None:
    app = App("enrich")
    users = app.table("users")
    app.join(app.topic("clicks"), users, into="clicked", name="click")(lambda c, u: u)
    app.join(app.topic("views"), users, into="viewed", name="view")(lambda v, u: u)
    with TestDriver(app) as driver:
        assert driver.topology.groups == (("click", "view"),)
        driver.pipe("users", {"country": "NL"}, key="u1", timestamp=1)
        driver.pipe("clicks", {}, key="u1", timestamp=2)
        driver.pipe("views", {}, key="u1", timestamp=3)
        assert [r.value for r in driver.read_output("clicked")] == [{"country": "NL"}]
        assert [r.value for r in driver.read_output("viewed")] == [{"country": "NL"}]
