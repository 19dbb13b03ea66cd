"""What goes wrong between a group member and its coordinator, sorted by what the member does next.

The coordinator client turns broker error codes into these exceptions; the member reacts to the
class (rediscover the coordinator, rejoin, forget its generation, or stop), never to raw codes.
"""

from __future__ import annotations

import enum

from aiokafka.errors import for_code

from streamjoin.errors import StreamJoinError

__all__ = (
    "CommitFailedError",
    "CoordinatorUnavailable",
    "ErrorCode",
    "FatalGroupError",
    "GroupError",
    "MemberFenced",
    "MemberIdRequired",
    "RebalanceInProgress",
    "error_name",
)


class ErrorCode(enum.IntEnum):
    """The Kafka error codes the group protocol reacts to (values are Kafka's)."""

    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    REQUEST_TIMED_OUT = 7
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    GROUP_AUTHORIZATION_FAILED = 30
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    UNSTABLE_OFFSET_COMMIT = 88


def error_name(code: int) -> str:
    """Kafka's name for an error code, for log lines and messages."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"{for_code(code).__name__}({code})"


class GroupError(StreamJoinError):
    """A group protocol request failed; `code` is the Kafka error code when the broker sent one."""

    def __init__(self, message: str, code: int = ErrorCode.NONE) -> None:
        super().__init__(message)
        self.code = code


class CoordinatorUnavailable(GroupError):
    """The coordinator moved, is loading, or cannot be reached: find it again and retry."""


class RebalanceInProgress(GroupError):
    """The group is rebalancing: (re)join to take part in the new generation."""


class MemberIdRequired(GroupError):
    """The broker handed out a member id (KIP-394): join again at once with `member_id`."""

    def __init__(self, member_id: str) -> None:
        super().__init__(f"broker assigned member id {member_id!r}", ErrorCode.MEMBER_ID_REQUIRED)
        self.member_id = member_id


class MemberFenced(GroupError):
    """The coordinator no longer knows this member or its generation: its partitions are lost.

    `forget_member_id` is true for UNKNOWN_MEMBER_ID (join as a new member), false for
    ILLEGAL_GENERATION (the member id is still valid, only the generation is stale).
    """

    @property
    def forget_member_id(self) -> bool:
        return self.code == ErrorCode.UNKNOWN_MEMBER_ID


class FatalGroupError(GroupError):
    """The member cannot take part in the group as configured (protocol, id, authorization)."""


class CommitFailedError(GroupError):
    """Offsets were not committed. Never swallowed: the caller decides whether to retry.

    `retriable` is true when the same offsets can be committed once the current rebalance has
    finished (the partitions are still owned); false when the member lost its generation and the
    partitions may belong to another member now.
    """

    def __init__(self, message: str, code: int, *, retriable: bool) -> None:
        super().__init__(message, code)
        self.retriable = retriable
