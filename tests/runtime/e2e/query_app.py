"""The app of the interactive query tests, importable by a `streamjoin worker` subprocess
(`query_app:joins`, names suffixed by STREAMJOIN_TEST_SUFFIX) and by the tests themselves: a
stream-table join (its table is the store `users-<suffix>`) and a stream-stream join (its window
stores `attribute-left` and `attribute-right`)."""

from __future__ import annotations

import os
from typing import Any

from streamjoin import App, JoinWindows


def make_app(suffix: str, **settings: Any) -> App:
    app = App(f"query-{suffix}", **settings)
    users, views = app.table(f"users-{suffix}"), app.topic(f"views-{suffix}")

    @app.join(views, users, how="left", into=f"enriched-{suffix}", name="enrich")
    def enrich(view: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
        return {"view": view, "user": user}

    impressions, clicks = app.topic(f"imp-{suffix}"), app.topic(f"clk-{suffix}")
    window = JoinWindows(before=0, after=3_600_000)

    @app.join(impressions, clicks, window=window, into=f"attributed-{suffix}", name="attribute")
    def attribute(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
        return {"impression": impression, "click": click}

    return app


TOPICS = ("users", "views", "enriched", "imp", "clk", "attributed")
joins = make_app(os.environ.get("STREAMJOIN_TEST_SUFFIX", "local"))
