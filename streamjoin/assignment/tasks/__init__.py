"""The task assignor (KIP-441 style): which process runs, mirrors and warms up each task.

`assign_tasks` is the pure decision the group leader makes; `plan_tasks` runs it on a
JSON-shaped scenario for `streamjoin plan --tasks`.
"""

from streamjoin.assignment.tasks.assignor import assign_tasks
from streamjoin.assignment.tasks.model import (
    RUNNING_ACTIVE,
    AssignorSettings,
    ClientAssignment,
    ClientState,
    PendingMove,
    Role,
    TaskAssignment,
    TaskId,
    TaskSpec,
    Warmup,
)
from streamjoin.assignment.tasks.scenario import plan_tasks

__all__ = (
    "RUNNING_ACTIVE",
    "AssignorSettings",
    "ClientAssignment",
    "ClientState",
    "PendingMove",
    "Role",
    "TaskAssignment",
    "TaskId",
    "TaskSpec",
    "Warmup",
    "assign_tasks",
    "plan_tasks",
)
