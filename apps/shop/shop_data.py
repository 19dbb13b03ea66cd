"""The shop demo's records and traffic: orders, payments (some declined, then retried) and
shipments, each keyed by its own id, so the joins must re-key payments and shipments by order;
and the countries of the global table that orders are located with."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass

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


Event = Order | Payment | Shipment


def key_of(record: Event) -> str:
    """Each record is keyed by its own id on its topic (not by the order it belongs to)."""
    if isinstance(record, Order):
        return record.order_id
    return record.payment_id if isinstance(record, Payment) else record.shipment_id


def encode(record: Event) -> bytes:
    return json.dumps(asdict(record), separators=(",", ":")).encode()


def generate_shop(orders: int, seed: int = 18) -> tuple[list[Event], set[str]]:
    """Events in time order, and the ids of the orders that must come out shipped: paid (a
    declined payment does not count; 1 in 10 is declined, half of those retried and accepted)
    within 2 minutes, and shipped (9 in 10) within 5 minutes of the payment."""
    rng = random.Random(seed)
    base = int(time.time() * 1000)  # now: a broker deletes window changelogs of old times
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
