"""After any interleaving of order and customer updates and deletes (foreign keys changing), a
foreign-key join's latest output per order equals the join recomputed from the final tables
(a tombstone or no output where no result exists)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamjoin import App
from streamjoin.testing import TestDriver

ORDERS = ("o1", "o2", "o3", "o4")
CUSTOMERS = ("c1", "c2", "c3")
update = st.one_of(
    st.tuples(
        st.just("orders"),
        st.sampled_from(ORDERS),
        st.one_of(st.none(), st.tuples(st.integers(0, 9), st.sampled_from(CUSTOMERS))),
    ),
    st.tuples(
        st.just("customers"),
        st.sampled_from(CUSTOMERS),
        st.one_of(st.none(), st.integers(0, 9)),
    ),
)


def build(how: Any) -> App:
    app = App("fkprops")
    orders, customers = app.table("orders", partitions=3), app.table("customers", partitions=2)

    @app.join(orders, customers, foreign_key=lambda o: o["c"], how=how, into="out")
    def pair(order: dict[str, Any], customer: dict[str, int] | None) -> Any:
        return [order["n"], order["c"], customer and customer["v"]]

    return app


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    how=st.sampled_from(("inner", "left")),
    updates=st.lists(update, max_size=30),
    commit_every=st.integers(1, 10),
)
def test_latest_output_per_order_is_the_join_of_the_final_tables(
    how: str, updates: list[tuple[str, str, Any]], commit_every: int
) -> None:
    orders: dict[str, tuple[int, str]] = {}
    customers: dict[str, int] = {}
    with TestDriver(build(how)) as driver:
        for index, (topic, key, value) in enumerate(updates):
            if topic == "orders":
                payload = None if value is None else {"n": value[0], "c": value[1]}
                table: dict[str, Any] = orders
            else:
                payload = None if value is None else {"v": value}
                table = customers
            driver.pipe(topic, payload, key=key, timestamp=index)
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
            if index % commit_every == 0:
                driver.commit()
        latest = {r.key: r.value for r in driver.read_output("out")}
    for key in ORDERS:
        order = orders.get(key)
        customer = None if order is None else customers.get(order[1])
        if order is None or (how == "inner" and customer is None):
            assert latest.get(key) is None
        else:
            assert latest.get(key) == [order[0], order[1], customer]
