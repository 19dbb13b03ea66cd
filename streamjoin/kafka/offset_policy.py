"""Kafka's `auto.offset.reset`: its values and their check. Here, below the spec and the group
member, so that an app's settings (dsl/settings.py) and the consumer (group/offset_reset.py,
which applies the policy) check it the same way."""

from __future__ import annotations

from typing import Literal, get_args

from streamjoin.errors import StreamJoinError

__all__ = ("OffsetReset", "OffsetResetError", "check_policy")

OffsetReset = Literal["earliest", "latest", "none"]
"""Kafka's `auto.offset.reset`: the log's oldest offset, its end, or stop with an error."""


class OffsetResetError(StreamJoinError):
    """A position is not in the log and the policy is "none"."""


def check_policy(policy: str) -> OffsetReset:
    """The policy, or a one-line error naming the choices."""
    if policy not in get_args(OffsetReset):
        raise OffsetResetError(
            f"auto_offset_reset {policy!r}: use earliest, latest or none "
            "(where to resume when an offset is not in the log)"
        )
    return policy  # type: ignore[return-value]
