"""The app the re-keying end-to-end tests run: impressions (keyed by auction) x clicks (keyed by
click id, bots filtered out, re-keyed by auction) -> attributed x conversions (keyed by
conversion id, re-keyed by auction) -> revenue. Names suffixed per test run
(STREAMJOIN_TEST_SUFFIX) so tests sharing one broker never meet."""

from __future__ import annotations

import os
from typing import Any

import streamjoin
from streamjoin import JoinWindows

SUFFIX = os.environ.get("STREAMJOIN_TEST_SUFFIX", "local")
HOUR = 3_600_000
WINDOW = JoinWindows(before=0, after=60_000, grace=HOUR)
"""A grace of an hour: the chained join's left input (the first join's output) trails its right
input by however long the first hop takes, which must never make a record late here."""

joins = streamjoin.App(f"rekey-{SUFFIX}")
impressions = joins.topic(f"impressions-{SUFFIX}")
clicks = joins.topic(f"clicks-{SUFFIX}")
conversions = joins.topic(f"conversions-{SUFFIX}")
attributed = joins.topic(f"attributed-{SUFFIX}")


def auction_key(value: dict[str, Any]) -> str:
    return f"a{value['auction']}"


@joins.join(
    impressions,
    clicks.filter(lambda c: not c["bot"]).key_by(auction_key),
    window=WINDOW,
    into=attributed,
)
def attribute(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
    return {"auction": impression["auction"], "click": click["click"]}


@joins.join(attributed, conversions.key_by(auction_key), window=WINDOW, into=f"revenue-{SUFFIX}")
def revenue(attribution: dict[str, Any], conversion: dict[str, Any]) -> dict[str, Any]:
    return {**attribution, "amount": conversion["amount"]}
