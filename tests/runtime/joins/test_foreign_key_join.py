"""Foreign-key joins (KIP-213): orders keyed by order id meet their customer through
order["customer"]; the result is keyed by the order. A changed foreign key replaces the old
result, a customer update reaches every order that refers to it now and none that did before,
and a response to an order value that changed since is discarded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.structs import ConsumerRecord

from streamjoin import App
from streamjoin.dsl.spec import JoinKind
from streamjoin.dsl.topology import compile_topology
from streamjoin.errors import ConfigurationError
from streamjoin.runtime.joins.foreign_key import ForeignKeyLeft, ForeignKeyRight
from streamjoin.runtime.joins.records import Side, SourceRecord
from streamjoin.runtime.topology.app_topology import store_specs
from streamjoin.runtime.topology.description import describe_topology
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.testing import TestDriver


def make(how: JoinKind, orders_partitions: int = 3, customers_partitions: int = 2) -> TestDriver:
    app = App("shop")
    orders = app.table("orders", partitions=orders_partitions)
    customers = app.table("customers", partitions=customers_partitions)

    @app.join(orders, customers, foreign_key=lambda o: o["customer"], how=how, into="oc")
    def order_customer(order: dict[str, Any], customer: dict[str, Any] | None) -> Any:
        return {"order": order["n"], "name": customer and customer["name"]}

    return TestDriver(app)


def latest(driver: TestDriver) -> dict[str, Any]:
    return {r.key: r.value for r in driver.read_output("oc")}


@pytest.fixture(params=["inner", "left"])
def how(request: pytest.FixtureRequest) -> JoinKind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def driver(how: JoinKind) -> Iterator[TestDriver]:
    with make(how) as running:
        yield running


def test_an_order_joins_its_customer_in_any_arrival_order(driver: TestDriver) -> None:
    driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=1)
    driver.pipe("orders", {"n": 1, "customer": "c1"}, key="o1", timestamp=2)
    driver.pipe("orders", {"n": 2, "customer": "c2"}, key="o2", timestamp=3)
    driver.pipe("customers", {"name": "Bob"}, key="c2", timestamp=4)
    out = {r.key: (r.value, r.timestamp) for r in driver.read_output("oc")}
    assert out == {  # the latest per order; before c2 came, o2 had a tombstone or (o2, None)
        "o1": ({"order": 1, "name": "Ann"}, 2),
        "o2": ({"order": 2, "name": "Bob"}, 4),
    }


def test_a_customer_update_reaches_current_referrers_only(driver: TestDriver) -> None:
    driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=1)
    driver.pipe("customers", {"name": "Bob"}, key="c2", timestamp=1)
    for n in range(3):
        driver.pipe("orders", {"n": n, "customer": "c1"}, key=f"o{n}", timestamp=2)
    driver.pipe("orders", {"n": 0, "customer": "c2"}, key="o0", timestamp=3)  # moves away
    driver.read_output("oc")
    driver.pipe("customers", {"name": "Ann B."}, key="c1", timestamp=4)
    assert latest(driver) == {
        "o1": {"order": 1, "name": "Ann B."},
        "o2": {"order": 2, "name": "Ann B."},
    }


def test_a_changed_foreign_key_replaces_the_result(driver: TestDriver, how: JoinKind) -> None:
    driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=1)
    driver.pipe("orders", {"n": 1, "customer": "c1"}, key="o1", timestamp=2)
    driver.read_output("oc")
    driver.pipe("orders", {"n": 1, "customer": "nobody"}, key="o1", timestamp=3)
    expected = None if how == "inner" else {"order": 1, "name": None}
    assert [(r.key, r.value) for r in driver.read_output("oc")] == [("o1", expected)]


def test_deleting_the_order_or_its_customer(driver: TestDriver, how: JoinKind) -> None:
    driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=1)
    driver.pipe("orders", {"n": 1, "customer": "c1"}, key="o1", timestamp=2)
    driver.pipe("orders", {"n": 2, "customer": "c1"}, key="o2", timestamp=2)
    driver.read_output("oc")
    driver.pipe("customers", None, key="c1", timestamp=3)
    gone = None if how == "inner" else "left"
    got = latest(driver)
    assert got == {
        "o1": gone and {"order": 1, "name": None},
        "o2": gone and {"order": 2, "name": None},
    }
    driver.pipe("orders", None, key="o1", timestamp=4)
    assert [(r.key, r.value) for r in driver.read_output("oc")] == [("o1", None)]


def test_a_new_order_without_its_customer_emits_by_kind(driver: TestDriver, how: JoinKind) -> None:
    """An inner join has no result to take back for a new order: Kafka Streams sends nothing
    (no tombstone), nor does streamjoin."""
    driver.pipe("orders", {"n": 1, "customer": "c9"}, key="o1", timestamp=2)
    expected = [] if how == "inner" else [("o1", {"order": 1, "name": None}, 2)]
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output("oc")] == expected


def test_a_result_caused_by_a_customer_update_carries_its_timestamp(driver: TestDriver) -> None:
    """Issue 34's fourth example: Kafka Streams stamps a result with the timestamp of the update
    that caused it (the customer's here, though the order is later)."""
    driver.pipe("orders", {"n": 1, "customer": "c1"}, key="o1", timestamp=15)
    driver.read_output("oc")
    driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=10)
    assert [(r.value, r.timestamp) for r in driver.read_output("oc")] == [
        ({"order": 1, "name": "Ann"}, 10)
    ]


@pytest.mark.parametrize(("how", "stamp"), [("inner", 20), ("left", 6)])
def test_the_tombstone_of_a_deleted_order_is_stamped_as_kafka_streams(
    how: JoinKind, stamp: int
) -> None:
    """Inner: the delete goes by the customer's side and carries the later of the two
    timestamps; left: the delete's own (Kafka Streams 4.4 does the same)."""
    with make(how) as driver:
        driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=20)
        driver.pipe("orders", {"n": 1, "customer": "c1"}, key="o1", timestamp=5)
        driver.read_output("oc")
        driver.pipe("orders", None, key="o1", timestamp=6)
        assert [(r.value, r.timestamp) for r in driver.read_output("oc")] == [(None, stamp)]


def test_a_response_to_a_changed_order_is_discarded() -> None:
    """Two updates of an order before the customer side answers the first: only the answer to
    the current value is joined."""
    app = App("shop")
    orders, customers = app.table("orders"), app.table("customers")
    app.join(orders, customers, foreign_key=lambda o: o["customer"], into="oc", name="j")(
        lambda o, c: [o["n"], c["name"]]
    )
    with TestDriver(app) as driver:
        driver.pipe("customers", {"name": "Ann"}, key="c1", timestamp=1)
        driver.pipe("customers", {"name": "Bob"}, key="c2", timestamp=1)
        subscription = "shop-j-subscription"
        driver.pipe("orders", {"n": 1, "customer": "c1"}, key="o1", timestamp=2)
        driver.pipe("orders", {"n": 2, "customer": "c2"}, key="o1", timestamp=3)
        assert [r.value for r in driver.read_output("oc")] == [[1, "Ann"], [2, "Bob"]]
        first = driver.read_output(subscription)[0]
        driver.pipe_raw(subscription, first.value, key=first.key, timestamp=4)  # a late replay
        assert driver.read_output("oc") == []
        assert driver.counters("j").stale == 1


def test_foreign_key_joins_refuse_what_they_cannot_run() -> None:
    app = App("shop")
    orders, customers, clicks = app.table("orders"), app.table("customers"), app.topic("c")
    fk = {"foreign_key": lambda o: o["customer"]}
    with pytest.raises(ConfigurationError, match="inner or left, not 'outer'"):
        app.join(orders, customers, how="outer", into="x", name="a", **fk)(max)
    with pytest.raises(ConfigurationError, match="joins two tables"):
        app.join(clicks, customers, into="x", name="b", **fk)(max)
    app.join(orders, customers, into="x", name="c", **fk)(max)
    with pytest.raises(ConfigurationError, match="'c-fk' is declared twice"):
        app.join(orders, customers, into="y", name="c-fk")(max)


def test_describe_shows_both_sub_topologies_and_the_internal_topics() -> None:
    with make("left") as driver:
        described = describe_topology(compile_topology(driver.app, {"orders": 3, "customers": 2}))
    subs = {s["name"]: s for s in described["subtopologies"]}
    assert subs["order_customer"]["tasks"] == 3 and subs["order_customer-fk"]["tasks"] == 2
    internal = {t["topic"]: (t["kind"], t["partitions"]) for t in described["internal_topics"]}
    assert internal["shop-order_customer-subscription"] == ("subscription", 2)
    assert internal["shop-order_customer-response"] == ("response", 3)
    assert internal["shop-order_customer-fk-subscriptions-changelog"] == ("changelog", 2)


def test_a_delete_processed_again_after_a_restore_still_retracts(tmp_path: Path) -> None:
    with make("left") as driver:
        spec = driver.app.get_join("order_customer")
    (left_spec,) = store_specs(spec)
    store = KeyValueStore(left_spec, tmp_path / "l", MemoryBudget())
    order = b'{"n": 1, "customer": "c1"}'
    store.restore(
        [
            ConsumerRecord("orders", 0, 0, 1, 0, b"o1", order, None, 2, 1, ()),
            ConsumerRecord("orders", 0, 1, 2, 0, b"o1", None, None, 2, 0, ()),
        ]
    )
    store.attach_writer(object())  # type: ignore[arg-type]  # a source-fed store logs nothing
    join = ForeignKeyLeft(spec, store, _Sink())
    replayed = join.process(SourceRecord(Side.LEFT, b"o1", None, 2, 1))
    assert [(r.key, r.left, r.right) for r in replayed] == [(b"o1", None, None)]
    assert join.process(SourceRecord(Side.LEFT, b"o1", None, 3, 2)) == []  # past the restore
    store.close()


class _Sink:
    def send(self, record: Any) -> None:
        pass


class _Queue:
    """A sink that keeps what is sent, for a test to deliver in the order it chooses."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, record: Any) -> None:
        self.sent.append(record)

    def take(self) -> SourceRecord:
        record = self.sent.pop(0)
        return SourceRecord(Side.RIGHT, record.key, record.value, record.timestamp, 0)


def test_a_customer_deleted_while_its_order_changes_leaves_no_stale_result(
    tmp_path: Path,
) -> None:
    """A race on a real broker (found by the e2e foreign-key test under traffic): the customer's
    delete answers the order's old value, which the order's update (same customer) makes stale,
    so that answer is discarded. Kafka Streams 4.4 asks no answer of an update that keeps its
    foreign key (it assumes the old value's result went with the customer) and keeps the old
    result for good; streamjoin asks one and retracts it (docs/joins.md, difference 5)."""
    app = App("shop")
    orders, customers = app.table("orders"), app.table("customers")
    app.join(orders, customers, foreign_key=lambda o: o["c"], into="oc", name="j")(
        lambda o, c: [o["n"], c["v"]]
    )
    left_spec, right_spec = app.get_join("j"), app.get_join("j-fk")
    stores = [
        KeyValueStore(spec, tmp_path / spec.name, MemoryBudget())
        for spec in (*store_specs(left_spec), *store_specs(right_spec))
    ]
    for store in stores:
        store.attach_writer(object())  # type: ignore[arg-type]  # nothing logs here
    to_right, to_left = _Queue(), _Queue()
    left = ForeignKeyLeft(left_spec, stores[0], to_right)
    right = ForeignKeyRight(right_spec, stores[1], stores[2], to_left)
    customer, gone = b'{"v": "Ann"}', None
    right.process(SourceRecord(Side.RIGHT, b"c1", customer, 1, 0))
    left.process(SourceRecord(Side.LEFT, b"o1", b'{"n": 1, "c": "c1"}', 2, 0))
    right.process(SourceRecord(Side.LEFT, *_subscription(to_right)))
    assert [r.left.value for r in left.process(to_left.take())] == [{"n": 1, "c": "c1"}]
    right.process(SourceRecord(Side.RIGHT, b"c1", gone, 3, 1))  # answers o1's old value...
    left.process(SourceRecord(Side.LEFT, b"o1", b'{"n": 2, "c": "c1"}', 4, 1))  # ...changed now
    assert left.process(to_left.take()) == []  # stale: discarded
    right.process(SourceRecord(Side.LEFT, *_subscription(to_right)))
    retracted = [o for _ in list(to_left.sent) for o in left.process(to_left.take())]
    assert [(r.key, r.left, r.right) for r in retracted] == [(b"o1", None, None)]
    for store in stores:
        store.close()


def _subscription(queue: _Queue) -> tuple[bytes, bytes, int, int]:
    record = queue.sent.pop(0)
    return record.key, record.value, record.timestamp, 0
