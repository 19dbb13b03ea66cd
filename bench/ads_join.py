"""The demo's ad join (apps/ads/app.py: its joiner, record types and window) on topics of a
benchmark's own, so runs and modes on one broker never meet.

Topic names: `<prefix>-impressions`, `<prefix>-clicks`, `<prefix>-attributed`; app id `<prefix>`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ADS_DIR = Path(__file__).resolve().parent.parent / "apps" / "ads"
sys.path.insert(0, str(ADS_DIR))

from app import Attributed, attribute  # noqa: E402 - the demo's modules live in apps/ads
from app import joins as ads_app  # noqa: E402
from data import Click, Impression, generate_traffic  # noqa: E402
from verify import longest_gap, longest_gap_at  # noqa: E402

from streamjoin import App, JoinWindows  # noqa: E402

__all__ = (
    "AD_WINDOW",
    "Click",
    "Impression",
    "generate_traffic",
    "longest_gap",
    "longest_gap_at",
    "make_app",
    "topic_names",
)

_demo_window = ads_app.get_join("attribute").window
assert _demo_window is not None
AD_WINDOW: JoinWindows = _demo_window
"""The demo's window: a click joins its impression within a minute, grace 5 s."""


def topic_names(prefix: str) -> tuple[str, str, str]:
    """(impressions, clicks, output)."""
    return f"{prefix}-impressions", f"{prefix}-clicks", f"{prefix}-attributed"


def make_app(
    prefix: str, *, window: JoinWindows = AD_WINDOW, rekey_clicks: bool = False, **settings: Any
) -> App:
    """The ad join under app id `prefix`; `settings` as for `App` (acceptable_recovery_lag...).
    `rekey_clicks`: the clicks topic is keyed otherwise, the join re-keys it by auction id
    (`key_by("auction_id")`, through a repartition topic)."""
    app = App(prefix, **settings)
    impressions, clicks, output = topic_names(prefix)
    click_topic = app.topic(clicks, value_type=Click)
    app.join(
        app.topic(impressions, value_type=Impression),
        click_topic.key_by("auction_id") if rekey_clicks else click_topic,
        window=window,
        how="left",
        into=app.topic(output, value_type=Attributed),
        name="attribute",
    )(attribute)
    return app
