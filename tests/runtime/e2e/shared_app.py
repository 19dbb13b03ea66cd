"""The app of the shared-source end-to-end test: three joins reading impressions - impressions x
clicks, impressions x clicks re-keyed (by the same key) through a key_by that reads clicks too,
and impressions looked up in a global table of regions - so all four are one sub-topology, whose
task p owns partition p of impressions and clicks. Names suffixed per test run
(STREAMJOIN_TEST_SUFFIX)."""

from __future__ import annotations

import os
from typing import Any

import streamjoin
from streamjoin import JoinWindows

SUFFIX = os.environ.get("STREAMJOIN_TEST_SUFFIX", "local")
WINDOW = JoinWindows(before=0, after=60_000, grace=3_600_000)
"""A grace of an hour: re-keyed clicks trail the impressions by however long the hop takes."""

joins = streamjoin.App(f"shared-{SUFFIX}")
impressions = joins.topic(f"impressions-{SUFFIX}")
clicks = joins.topic(f"clicks-{SUFFIX}")
regions = joins.global_table(f"regions-{SUFFIX}")


@joins.join(impressions, clicks, window=WINDOW, into=f"attributed-{SUFFIX}")
def attribute(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
    return {"auction": impression["auction"], "delay": click["ts"] - impression["ts"]}


@joins.join(
    impressions,
    clicks.key_by(lambda click: f"a{click['auction']}"),
    window=WINDOW,
    into=f"rekeyed-{SUFFIX}",
)
def rekeyed(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
    return {"auction": impression["auction"], "delay": click["ts"] - impression["ts"]}


@joins.join(
    impressions,
    regions,
    key=lambda impression: f"r{impression['auction'] % 10}",
    how="left",
    into=f"located-{SUFFIX}",
)
def locate(impression: dict[str, Any], region: dict[str, Any] | None) -> dict[str, Any]:
    return {"auction": impression["auction"], "region": region}
