"""Consumer group membership with EAGER and COOPERATIVE rebalancing, and a consumer built on it."""

from streamjoin.group.config import MemberConfig
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.errors import CommitFailedError, FatalGroupError, GroupError
from streamjoin.group.listener import RebalanceListener
from streamjoin.group.member import GroupMember, MemberState

__all__ = (
    "CommitFailedError",
    "CooperativeConsumer",
    "FatalGroupError",
    "GroupError",
    "GroupMember",
    "MemberConfig",
    "MemberState",
    "RebalanceListener",
)
