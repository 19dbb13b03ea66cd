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
from verify import longest_gap  # noqa: E402

from streamjoin import App, JoinWindows  # noqa: E402

__all__ = (
    "AD_WINDOW",
    "Click",
    "Impression",
    "generate_traffic",
    "longest_gap",
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


def make_app(prefix: str, *, window: JoinWindows = AD_WINDOW, **settings: Any) -> App:
    """The ad join under app id `prefix`; `settings` as for `App` (acceptable_recovery_lag...)."""
    app = App(prefix, **settings)
    impressions, clicks, output = topic_names(prefix)
    app.join(
        app.topic(impressions, value_type=Impression),
        app.topic(clicks, value_type=Click),
        window=window,
        how="left",
        into=app.topic(output, value_type=Attributed),
        name="attribute",
    )(attribute)
    return app
