"""The app of the learner tests, importable by a `streamjoin worker` subprocess
(`learn_app:joins`, names suffixed by STREAMJOIN_TEST_SUFFIX) and by the tests themselves."""

from __future__ import annotations

import os
from typing import Any

from streamjoin import App, JoinWindows


def make_app(suffix: str, **settings: Any) -> App:
    app = App(f"learn-{suffix}", **settings)
    impressions, clicks = app.topic(f"imp-{suffix}"), app.topic(f"clk-{suffix}")
    window = JoinWindows(before=0, after=3_600_000)

    @app.join(impressions, clicks, window=window, into=f"out-{suffix}", name="attribute")
    def attribute(impression: dict[str, Any], click: dict[str, Any]) -> dict[str, Any]:
        return {"auction": impression["auction"]}

    return app


joins = make_app(os.environ.get("STREAMJOIN_TEST_SUFFIX", "local"), acceptable_recovery_lag=0)
