"""The shop: orders keyed by order id; payments keyed by payment id, declined ones filtered out
and the rest re-keyed by order id; shipments keyed by shipment id, re-keyed by order id. Paid
orders are joined with their shipment in a second, chained join, and each shipped order is
located through the global table of countries in a third (every worker holds the table whole;
it has its own partition count). A fourth, a foreign-key join (KIP-213), bills each order of
the order book (a table: order id -> order) to its customer (a table keyed by customer id, with
another partition count): an order moved to another customer, or a customer's update, replaces
the result of every order it concerns.

Run it with `streamjoin worker app:joins` from this directory; `streamjoin describe app:joins`
prints its topology (four joins, two repartition sub-topologies, one global table).
"""

from __future__ import annotations

from dataclasses import dataclass

from shop_data import CUSTOMERS, ORDER_BOOK, Country, Customer, Order, Payment, Shipment

import streamjoin
from streamjoin import JoinWindows

# A grace of ten minutes of event time: the chained join reads the first join's output, which
# trails the shipments by however long the first hop and a rebalance take (the demo replays
# about 7 s of event time per second).
GRACE = 600_000

joins = streamjoin.App("shop", broker="localhost:9092", acceptable_recovery_lag=1_500)

orders = joins.topic("shop-orders", value_type=Order)
payments = joins.topic("shop-payments", value_type=Payment)
shipments = joins.topic("shop-shipments", value_type=Shipment)
countries = joins.global_table("shop-countries", value_type=Country)


@dataclass(frozen=True, slots=True)
class Paid:
    order_id: str
    amount_cents: int
    paid_ms: int
    country: str


@dataclass(frozen=True, slots=True)
class Shipped:
    order_id: str
    amount_cents: int
    carrier: str
    paid_to_ship_ms: int
    country: str


paid = joins.topic("shop-paid", value_type=Paid)


@joins.join(
    orders,
    payments.filter(lambda p: p.ok).key_by("order_id"),
    window=JoinWindows(before=0, after=120_000, grace=GRACE),
    into=paid,
)
def pay(order: Order, payment: Payment) -> Paid:
    return Paid(order.order_id, order.amount_cents, payment.timestamp_ms, order.country)


@joins.join(
    paid,
    shipments.key_by("order_id"),
    window=JoinWindows(before=0, after=300_000, grace=GRACE),
    into=(shipped := joins.topic("shop-shipped", value_type=Shipped)),
)
def ship(order: Paid, shipment: Shipment) -> Shipped:
    return Shipped(
        order.order_id,
        order.amount_cents,
        shipment.carrier,
        shipment.timestamp_ms - order.paid_ms,
        order.country,
    )


@dataclass(frozen=True, slots=True)
class Located:
    order_id: str
    country: str
    region: str | None


@joins.join(
    shipped,
    countries,
    key=lambda order: order.country,
    how="left",
    into=joins.topic("shop-located", value_type=Located),
)
def locate(order: Shipped, country: Country | None) -> Located:
    return Located(order.order_id, order.country, country.region if country else None)


@dataclass(frozen=True, slots=True)
class Billed:
    order_id: str
    customer: str
    name: str | None
    tier: str | None


@joins.join(
    joins.table(ORDER_BOOK, value_type=Order),
    joins.table(CUSTOMERS, value_type=Customer),
    foreign_key=lambda order: order.customer,
    how="left",
    into=joins.topic("shop-order-customers", value_type=Billed),
)
def bill(order: Order, customer: Customer | None) -> Billed:
    return Billed(
        order.order_id,
        order.customer,
        customer.name if customer else None,
        customer.tier if customer else None,
    )
