"""The ad-attribution join: which impression led to each click, and which were never clicked.

Run it with `streamjoin worker app:joins` from this directory (the bootstrap defaults to
localhost:9092; pass --bootstrap to use another broker).
"""

from __future__ import annotations

from dataclasses import dataclass

from data import Click, Impression

import streamjoin
from streamjoin import JoinWindows

# A worker joining the group first restores a task's state as a learner while the current owner
# keeps running it; it takes the task over (after a follow-up rebalance) once it is within
# `acceptable_recovery_lag` changelog records of the end. Under load a rebalance takes a few
# seconds, during which the active keeps writing: the lag must allow for that.
joins = streamjoin.App("ads", broker="localhost:9092", acceptable_recovery_lag=1_500)

impressions = joins.topic("ads-impressions", value_type=Impression)
clicks = joins.topic("ads-clicks", value_type=Click)


@dataclass(frozen=True, slots=True)
class Attributed:
    auction_id: str
    campaign: str
    clicked: bool
    click_delay_ms: int | None


@joins.join(
    impressions,
    clicks,
    window=JoinWindows(before=0, after=60_000, grace=5_000),
    how="left",
    into=joins.topic("ads-attributed", value_type=Attributed),
)
def attribute(impression: Impression, click: Click | None) -> Attributed:
    """A click counts for the impression of its auction if it came within a minute."""
    return Attributed(
        auction_id=impression.auction_id,
        campaign=impression.campaign,
        clicked=click is not None,
        click_delay_ms=None if click is None else click.timestamp_ms - impression.timestamp_ms,
    )
