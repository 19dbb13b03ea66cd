"""The app of the table query tests, importable by a `streamjoin worker` subprocess
(`query_tables_app:joins`, names suffixed by STREAMJOIN_TEST_SUFFIX) and by the tests: a
versioned table (`prices-<suffix>`), the two tables of a foreign-key join (`orders-<suffix>`
and `customers-<suffix>`) and a global table (`countries-<suffix>`)."""

from __future__ import annotations

import os
from typing import Any

from streamjoin import App

HISTORY_MS = 3_600_000
PARTITIONS = {"prices": 3, "trades": 3, "priced": 3, "orders": 3, "customers": 2}
PARTITIONS |= {"order-customers": 3, "countries": 2, "visits": 2, "geo": 2}


def make_app(suffix: str, **settings: Any) -> App:
    app = App(f"query-tables-{suffix}", **settings)
    prices = app.table(f"prices-{suffix}", versioned=True, history_ms=HISTORY_MS)

    @app.join(app.topic(f"trades-{suffix}"), prices, into=f"priced-{suffix}", name="price")
    def price(trade: dict[str, Any], price: dict[str, Any]) -> dict[str, Any]:
        return {"trade": trade, "price": price}

    orders, customers = app.table(f"orders-{suffix}"), app.table(f"customers-{suffix}")

    @app.join(
        orders, customers, foreign_key=lambda o: o["customer"], into=f"order-customers-{suffix}"
    )
    def order_customer(order: dict[str, Any], customer: dict[str, Any]) -> dict[str, Any]:
        return {"order": order, "customer": customer}

    countries = app.global_table(f"countries-{suffix}")

    @app.join(
        app.topic(f"visits-{suffix}"), countries, key=lambda v: v["country"], into=f"geo-{suffix}"
    )
    def geo(visit: dict[str, Any], country: dict[str, Any]) -> dict[str, Any]:
        return {"visit": visit, "country": country}

    return app


joins = make_app(os.environ.get("STREAMJOIN_TEST_SUFFIX", "local"))
