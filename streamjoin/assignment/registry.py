"""Every consumer assignor streamjoin ships, by its Kafka protocol name."""

from __future__ import annotations

from streamjoin.assignment.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.fair import FairAssignor
from streamjoin.assignment.model import PartitionAssignor
from streamjoin.assignment.range import RangeAssignor
from streamjoin.assignment.roundrobin import RoundRobinAssignor
from streamjoin.assignment.sticky import StickyAssignor
from streamjoin.assignment.stream_join_sticky import StreamJoinStickyAssignor
from streamjoin.errors import ConfigurationError

__all__ = ("ASSIGNORS", "create_assignor")

ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    cls.name: cls
    for cls in (
        RangeAssignor,
        RoundRobinAssignor,
        FairAssignor,
        StickyAssignor,
        CooperativeStickyAssignor,
        StreamJoinStickyAssignor,
    )
}


def create_assignor(name: str) -> PartitionAssignor:
    """A new assignor (assignors keep per-member state, so each member needs its own)."""
    try:
        return ASSIGNORS[name]()
    except KeyError:
        known = ", ".join(sorted(ASSIGNORS))
        raise ConfigurationError(f"unknown assignor {name!r} (known: {known})") from None
