"""Every consumer assignor streamjoin ships, by its Kafka protocol name."""

from __future__ import annotations

from streamjoin.assignment.consumer.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.consumer.fair import FairAssignor
from streamjoin.assignment.consumer.range import RangeAssignor
from streamjoin.assignment.consumer.roundrobin import RoundRobinAssignor
from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.consumer.sticky.stream_join import StreamJoinStickyAssignor
from streamjoin.assignment.model import PartitionAssignor
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
