"""The shop demo's records and traffic: orders, payments (some declined, then retried) and
shipments, each keyed by its own id, so the joins must re-key payments and shipments by order;
the countries of the global table that orders are located with; and the two tables of the
foreign-key join, the order book (order id -> order) and the customers (customer id ->
customer), with updates."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, replace

ORDER_EVERY_MS = 20
"""Event time between two orders."""

COUNTRIES = {
    "NL": "Europe",
    "FR": "Europe",
    "DE": "Europe",
    "JP": "Asia",
    "IN": "Asia",
    "BR": "South America",
    "US": "North America",
    "KE": "Africa",
}
"""The global table's rows: country code -> region."""
ORDER_COUNTRIES = [*COUNTRIES, "XX"]
"""Where orders come from, in turn: "XX" is in no table (a left join emits it with None)."""


@dataclass(frozen=True, slots=True)
class Country:
    code: str
    region: str


@dataclass(frozen=True, slots=True)
class Order:
    order_id: str
    customer: str
    amount_cents: int
    timestamp_ms: int
    country: str = "XX"


@dataclass(frozen=True, slots=True)
class Customer:
    customer_id: str
    name: str
    tier: str


@dataclass(frozen=True, slots=True)
class Row:
    """An update of a table topic: `value` under `key` (the order book or the customers)."""

    topic: str
    key: str
    value: Order | Customer
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class Payment:
    payment_id: str
    order_id: str
    ok: bool
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class Shipment:
    shipment_id: str
    order_id: str
    carrier: str
    timestamp_ms: int


Event = Order | Payment | Shipment | Row

ORDER_BOOK = "shop-order-book"
CUSTOMERS = "shop-customers"
CUSTOMER_IDS = 500
"""Orders name customers c0..c499; the table holds all but the last 20 (a left join emits
their orders with no name)."""
TIERS = ["bronze", "silver", "gold"]


def key_of(record: Event) -> str:
    """Each record is keyed by its own id on its topic (not by the order it belongs to)."""
    if isinstance(record, Order):
        return record.order_id
    if isinstance(record, Row):
        return record.key
    return record.payment_id if isinstance(record, Payment) else record.shipment_id


def encode(record: Event | Country) -> bytes:
    value = record.value if isinstance(record, Row) else record
    return json.dumps(asdict(value), separators=(",", ":")).encode()


def generate_tables(events: list[Event], seed: int = 213) -> list[Row]:
    """The foreign-key join's table updates, in time order: every customer before the first
    order, every order into the order book at its own time; then 1 order in 40 moved to another
    customer (a foreign-key change) and 1 customer in 8 changing tier (reaching all its
    orders), within a minute of event time."""
    rng = random.Random(seed)
    orders = [e for e in events if isinstance(e, Order)]
    start, end = orders[0].timestamp_ms, orders[-1].timestamp_ms
    rows = [
        Row(CUSTOMERS, f"c{n}", Customer(f"c{n}", f"customer {n}", TIERS[n % 3]), start - 1)
        for n in range(CUSTOMER_IDS - 20)
    ]
    for order in orders:
        rows.append(Row(ORDER_BOOK, order.order_id, order, order.timestamp_ms))
        if rng.random() < 1 / 40:
            moved = replace(order, customer=f"c{rng.randrange(CUSTOMER_IDS)}")
            at = min(order.timestamp_ms + rng.randrange(1_000, 60_000), end)
            rows.append(Row(ORDER_BOOK, order.order_id, moved, at))
    for n in range(0, CUSTOMER_IDS - 20, 8):
        upgraded = Customer(f"c{n}", f"customer {n}", TIERS[(n + 1) % 3])
        rows.append(Row(CUSTOMERS, f"c{n}", upgraded, rng.randrange(start, end)))
    rows.sort(key=lambda r: r.timestamp_ms)
    return rows


def expected_order_customers(rows: list[Row]) -> dict[str, dict[str, str | None]]:
    """The left join of the final tables: order id -> the output value of the app's `bill`."""
    book: dict[str, Order] = {}
    customers: dict[str, Customer] = {}
    for row in rows:
        if isinstance(row.value, Order):
            book[row.key] = row.value
        else:
            customers[row.key] = row.value
    out: dict[str, dict[str, str | None]] = {}
    for order_id, order in book.items():
        customer = customers.get(order.customer)
        out[order_id] = {
            "order_id": order_id,
            "customer": order.customer,
            "name": customer.name if customer else None,
            "tier": customer.tier if customer else None,
        }
    return out


def generate_shop(
    orders: int, seed: int = 18, *, start_ms: int | None = None
) -> tuple[list[Event], set[str]]:
    """Events in time order, and the ids of the orders that must come out shipped: paid (a
    declined payment does not count; 1 in 10 is declined, half of those retried and accepted)
    within 2 minutes, and shipped (9 in 10) within 5 minutes of the payment. An order every
    ORDER_EVERY_MS from `start_ms` (default now: past records of many orders start earlier, so
    that none is stamped further ahead of the workers' clock than their `max_future_ms`)."""
    rng = random.Random(seed)
    base = int(time.time() * 1000) if start_ms is None else start_ms
    events: list[Event] = []
    shipped: set[str] = set()
    for n in range(orders):
        order_id, ts = f"o{n}", base + n * ORDER_EVERY_MS
        customer, amount = f"c{rng.randrange(500)}", rng.randrange(100, 50_000)
        country = ORDER_COUNTRIES[n % len(ORDER_COUNTRIES)]
        events.append(Order(order_id, customer, amount, ts, country))
        paid_at = ts + rng.randrange(1_000, 60_000)
        accepted = rng.random() >= 0.1
        events.append(Payment(f"p{n}", order_id, accepted, paid_at))
        if not accepted:
            if rng.random() < 0.5:
                continue
            paid_at += rng.randrange(1_000, 30_000)
            events.append(Payment(f"p{n}-retry", order_id, True, paid_at))
        if rng.random() < 0.9:
            events.append(
                Shipment(
                    f"s{n}",
                    order_id,
                    rng.choice(["ups", "dhl"]),
                    paid_at + rng.randrange(60_000, 240_000),
                )
            )
            shipped.add(order_id)
    events.sort(key=lambda e: e.timestamp_ms)
    return events, shipped
