"""The join bench/backfill.py runs on both engines: which impression led to each click.

Topic names carry BENCH_SUFFIX so runs on one broker never meet.
"""

from __future__ import annotations

import os
from typing import Any

from streamjoin import App, JoinWindows
from streamjoin.dsl.fields import fields, left, right

SUFFIX = os.environ.get("BENCH_SUFFIX", "local")
WINDOW = JoinWindows(before=0, after=60_000, grace=5_000)

app = App(f"bench-backfill-{SUFFIX}")
impressions = app.topic(f"bench-impressions-{SUFFIX}")
clicks = app.topic(f"bench-clicks-{SUFFIX}")


@app.join(impressions, clicks, window=WINDOW, how="inner", into=f"bench-attributed-{SUFFIX}")
def attribute(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
    return {
        "auction": impression["auction"],
        "campaign": impression["campaign"],
        "delay_ms": click["ts"] - impression["ts"],
    }


# The same join as a field mapping, in an app of its own so the worker runs only `attribute`.
fields_app = App(f"bench-backfill-fields-{SUFFIX}")
attribute_fields = fields_app.join(
    fields_app.topic(impressions.name),
    fields_app.topic(clicks.name),
    window=WINDOW,
    how="inner",
    into=f"bench-attributed-fields-{SUFFIX}",
    name="attribute_fields",
)(
    fields(
        auction=left("auction", int),
        campaign=left("campaign", str),
        delay_ms=right("ts", int) - left("ts", int),
    )
)
