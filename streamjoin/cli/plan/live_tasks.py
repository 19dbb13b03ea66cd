"""A live streamjoin worker group (protocol `streamjoin-tasks`) as a task scenario, for
`streamjoin plan --tasks --from-group GROUP`.

Every member's subscription carries its process id, capacity and local offset sums
(SubscriptionInfo), and its assignment the tasks it was told to run (AssignmentInfo): the
clients are the process ids, each with its members (the worker processes of one host) and
what each runs now. The changelog end offsets are not read: each task's end is taken as the
furthest local state any member reports, so the plan shows placement and balance; how far a
learner still has to go shows in `streamjoin_restore_remaining`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamjoin.assignment.consumer.consumer_protocol import decode_assignment, decode_subscription
from streamjoin.assignment.task_metadata import decode_assignment_info, decode_subscription_info
from streamjoin.assignment.tasks.group_assignor import TaskPartitionAssignor
from streamjoin.assignment.tasks.model import RUNNING_ACTIVE, TaskId, best_offset_sum
from streamjoin.errors import ConfigurationError, ProtocolDecodeError

__all__ = ("task_group_scenario",)


def task_group_scenario(
    group: str, protocol: str, members: Sequence[tuple[str, str, str, bytes, bytes]]
) -> dict[str, Any]:
    """The task scenario of a stable group whose members reported their metadata (live.py
    checks that): DescribeGroups' members, as (id, client id, host, metadata, assignment)."""
    if protocol != TaskPartitionAssignor.name:
        raise ConfigurationError(
            f"group {group!r} uses the {protocol!r} assignor, not streamjoin's task assignor "
            f"({TaskPartitionAssignor.name!r}); plan it without --tasks"
        )
    clients: dict[str, dict[str, Any]] = {}
    offsets: dict[str, dict[TaskId, int]] = {}
    tasks: set[TaskId] = set()
    for member_id, _client_id, _host, metadata, assignment_bytes in members:
        try:
            info = decode_subscription_info(decode_subscription(metadata).user_data)
            told = decode_assignment_info(decode_assignment(assignment_bytes).user_data)
        except ProtocolDecodeError as exc:
            raise ConfigurationError(f"member {member_id!r} of group {group!r}: {exc}") from None
        client = clients.setdefault(info.process_id, {"members": {}})
        client["members"][member_id] = {
            "capacity": info.capacity,
            "active": [str(t) for t in told.active],
            "standby": [str(t) for t in (*told.standby, *told.learner)],
        }
        sums = offsets.setdefault(info.process_id, {})
        for task, offset_sum in info.offset_sums.items():
            sums[task] = best_offset_sum(sums.get(task), offset_sum)
        tasks.update(told.active, told.standby, told.learner, info.offset_sums)
    ends = dict.fromkeys(tasks, 0)
    for sums in offsets.values():
        for task, offset_sum in sums.items():
            if offset_sum != RUNNING_ACTIVE:
                ends[task] = max(ends[task], offset_sum)
    for process, sums in offsets.items():
        clients[process]["offsets"] = {str(task): s for task, s in sums.items()}
    return {
        "tasks": {str(task): {"end_offset": end} for task, end in sorted(ends.items())},
        "clients": clients,
    }
