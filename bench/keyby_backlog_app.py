"""The key_by backlog scenario's app (issue 35): orders keyed by order id joined with payments
keyed by payment id, re-keyed by `key_by("order_id")`, within ten minutes and with every
setting at its default. Names are suffixed per run (STREAMJOIN_TEST_SUFFIX), so runs sharing
a broker never meet."""

from __future__ import annotations

import os
from typing import Any

import streamjoin
from streamjoin import JoinWindows

SUFFIX = os.environ.get("STREAMJOIN_TEST_SUFFIX", "local")

shop = streamjoin.App(f"backlog-{SUFFIX}")
orders = shop.topic(f"orders-{SUFFIX}")
payments = shop.topic(f"payments-{SUFFIX}")


@shop.join(
    orders,
    payments.key_by("order_id"),
    window=JoinWindows(before=0, after=600_000),
    into=f"paid-orders-{SUFFIX}",
)
def paid(order: dict[str, Any], payment: dict[str, Any]) -> dict[str, Any]:
    return {"order_id": order["order_id"], "payment_id": payment["payment_id"]}
