"""Synthetic ad traffic for the demo and the benchmarks: impressions, and clicks on some of them.

The generator knows which click belongs to which impression (the same auction id), so a run can
check that every pair the join should produce was produced.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass

__all__ = ("AdTraffic", "Click", "Impression", "generate_traffic")

CAMPAIGNS = ("spring-sale", "new-phone", "travel", "insurance", "games")


@dataclass(frozen=True, slots=True)
class Impression:
    auction_id: str
    campaign: str
    user_id: str
    timestamp_ms: int

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Click:
    auction_id: str
    timestamp_ms: int

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class AdTraffic:
    impressions: list[Impression]
    clicks: list[Click]

    def in_time_order(self) -> Iterator[Impression | Click]:
        """Both streams merged by timestamp, as they would arrive at the broker."""
        merged: list[Impression | Click] = [*self.impressions, *self.clicks]
        return iter(sorted(merged, key=lambda r: (r.timestamp_ms, isinstance(r, Click))))


def generate_traffic(
    impressions: int,
    *,
    click_rate: float = 0.3,
    max_click_delay_ms: int = 60_000,
    spacing_ms: int = 10,
    start_ms: int = 1_700_000_000_000,
    seed: int = 7,
) -> AdTraffic:
    """`impressions` impressions `spacing_ms` apart; a `click_rate` share of them is clicked
    within `max_click_delay_ms` (so every click joins its impression in a window that long)."""
    rng = random.Random(seed)
    shown: list[Impression] = []
    clicked: list[Click] = []
    for i in range(impressions):
        ts = start_ms + i * spacing_ms
        auction_id = f"auction-{seed}-{i:08d}"
        shown.append(
            Impression(auction_id, rng.choice(CAMPAIGNS), f"user-{rng.randrange(10_000):05d}", ts)
        )
        if rng.random() < click_rate:
            clicked.append(Click(auction_id, ts + rng.randrange(max_click_delay_ms + 1)))
    return AdTraffic(shown, clicked)
