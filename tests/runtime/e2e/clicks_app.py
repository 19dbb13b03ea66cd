"""The app the end-to-end worker tests run: impressions x clicks, names suffixed per test run
(STREAMJOIN_TEST_SUFFIX) so tests sharing one broker never meet."""

from __future__ import annotations

import os
from typing import Any

import streamjoin
from streamjoin import JoinWindows

SUFFIX = os.environ.get("STREAMJOIN_TEST_SUFFIX", "local")

joins = streamjoin.App(f"e2e-{SUFFIX}")
impressions = joins.topic(f"impressions-{SUFFIX}")
clicks = joins.topic(f"clicks-{SUFFIX}")


@joins.join(
    impressions,
    clicks,
    window=JoinWindows(before=0, after=60_000, grace=5_000),
    how="inner",
    into=f"attributed-{SUFFIX}",
)
def attribute(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
    return {"auction": impression["auction"], "delay": click["ts"] - impression["ts"]}
