"""`plan_tasks`: the task assignor on a JSON-shaped scenario, for `streamjoin plan --tasks`.

Input (missing keys take the defaults shown in `AssignorSettings` and below):

    {"config": {"acceptable_recovery_lag": 10000, "max_warmup_replicas": 2,
                "num_standby_replicas": 0},
     "tasks": {"0_0": {"stateful": true, "end_offset": 150000}, "1_0": {"stateful": false}},
     "clients": {"c1": {"capacity": 1, "active": ["0_0"], "standby": [],
                        "offsets": {"0_0": -2}},
                 "c2": {"members": {"c2-0": {"capacity": 1, "active": [], "standby": []},
                                    "c2-1": {}}}}}

A task is stateful when it says so or gives an end offset (0 when omitted); `offsets` are the
client's local offset sums (-2: running, caught up). A client with `members` (the worker
processes of one host) takes its capacity and previous tasks from them. Output: every client's
active, standby and learner task ids, its warm-ups (the learners and standbys a move to it
waits on), how its tasks spread over its members (if it has some), whether a follow-up
rebalance is needed, and the assignor's run time.
Anything malformed raises `ConfigurationError` naming the offending key.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.tasks.assignor import assign_tasks
from streamjoin.assignment.tasks.members import Member, spread_over_members
from streamjoin.assignment.tasks.model import (
    AssignorSettings,
    ClientAssignment,
    ClientState,
    TaskAssignment,
    TaskId,
    TaskSpec,
)
from streamjoin.errors import ConfigurationError

__all__ = ("TaskScenario", "parse_scenario", "plan_tasks", "timed_assignment")

_CONFIG_KEYS = ("acceptable_recovery_lag", "max_warmup_replicas", "num_standby_replicas")


@dataclass(frozen=True, slots=True)
class TaskScenario:
    clients: tuple[ClientState, ...]
    tasks: tuple[TaskSpec, ...]
    settings: AssignorSettings
    members: Mapping[str, tuple[Member, ...]] = field(default_factory=dict)
    """The members of the clients that list theirs."""

    def spread(self, assignment: TaskAssignment) -> dict[str, dict[str, ClientAssignment]]:
        """Client -> member -> roles, for the clients that list members."""
        return {
            client: spread_over_members(assignment.clients[client], members)
            for client, members in sorted(self.members.items())
        }


def plan_tasks(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run the task assignor on a scenario dict; the JSON-shaped answer."""
    parsed = parse_scenario(scenario)
    assignment, elapsed_ms = timed_assignment(parsed)
    spread = parsed.spread(assignment)

    def roles_of(roles: ClientAssignment) -> dict[str, list[str]]:
        return {
            "active": [str(task) for task in roles.active],
            "standby": [str(task) for task in roles.standby],
            "learner": [str(task) for task in roles.learner],
        }

    return {
        "clients": {
            client: {
                **roles_of(roles),
                "warmup": sorted(str(task) for task in assignment.warming_up(client)),
                **(
                    {"members": {m: roles_of(r) for m, r in spread[client].items()}}
                    if client in spread
                    else {}
                ),
            }
            for client, roles in sorted(assignment.clients.items())
        },
        "followup": assignment.followup,
        "assign_ms": round(elapsed_ms, 3),
    }


def timed_assignment(scenario: TaskScenario) -> tuple[TaskAssignment, float]:
    """The assignment and how long the assignor took, in milliseconds."""
    started = time.perf_counter()
    assignment = assign_tasks(scenario.clients, scenario.tasks, scenario.settings)
    return assignment, (time.perf_counter() - started) * 1000


def parse_scenario(scenario: object) -> TaskScenario:
    """Validate a scenario dict and build the assignor's typed inputs."""
    root = _mapping(scenario, "the scenario")
    _only(root, ("config", "tasks", "clients"), "the scenario")
    config = _mapping(root.get("config", {}), "config")
    _only(config, _CONFIG_KEYS, "config")
    settings = AssignorSettings(
        **{key: _integer(config[key], f"config.{key}") for key in _CONFIG_KEYS if key in config}
    )
    if "tasks" not in root or "clients" not in root:
        raise ConfigurationError('the scenario needs both "tasks" and "clients"')
    tasks = {
        _task_id(name, "tasks"): _task(spec, f"tasks.{name}")
        for name, spec in _mapping(root["tasks"], "tasks").items()
    }
    specs = tuple(TaskSpec(task, end) for task, end in sorted(tasks.items()))
    clients = _mapping(root["clients"], "clients")
    if not clients:
        raise ConfigurationError('"clients" is empty: a plan needs at least one client')
    parsed = [_client(name, spec, tasks) for name, spec in sorted(clients.items())]
    return TaskScenario(
        tuple(client for client, _ in parsed),
        specs,
        settings,
        {client.process_id: members for client, members in parsed if members},
    )


def _task(spec: object, where: str) -> int | None:
    """The task's end offset sum, or None if it is stateless."""
    fields = _mapping(spec, where)
    _only(fields, ("stateful", "end_offset"), where)
    stateful = fields.get("stateful", "end_offset" in fields)
    if not isinstance(stateful, bool):
        raise ConfigurationError(f"{where}.stateful: expected true or false, got {stateful!r}")
    if not stateful:
        if "end_offset" in fields:
            raise ConfigurationError(
                f"{where}: a stateless task has no changelog, so no end_offset"
            )
        return None
    end = _integer(fields.get("end_offset", 0), f"{where}.end_offset")
    if end < 0:
        raise ConfigurationError(f"{where}.end_offset: {end} is negative")
    return end


def _client(
    name: str, spec: object, tasks: Mapping[TaskId, int | None]
) -> tuple[ClientState, tuple[Member, ...]]:
    where = f"clients.{name}"
    fields = _mapping(spec, where)
    _only(fields, ("capacity", "active", "standby", "offsets", "members"), where)
    members = tuple(
        _member(member, member_spec, f"{where}.members.{member}", tasks)
        for member, member_spec in sorted(_mapping(fields.get("members", {}), where).items())
    )
    if members and not {"capacity", "active", "standby"}.isdisjoint(fields):
        raise ConfigurationError(
            f"{where}: a client with members takes capacity, active and standby from them"
        )
    active = set(_task_list(fields.get("active", []), f"{where}.active", tasks))
    standby = set(_task_list(fields.get("standby", []), f"{where}.standby", tasks))
    for member in members:
        active |= member.previous_active
        standby |= member.previous_standby
    offsets: dict[TaskId, int] = {}
    for task_name, value in _mapping(fields.get("offsets", {}), f"{where}.offsets").items():
        task = _known(task_name, f"{where}.offsets", tasks)
        if tasks[task] is None:
            raise ConfigurationError(
                f"{where}.offsets.{task_name}: task {task_name} is stateless and has no offsets"
            )
        offsets[task] = _integer(value, f"{where}.offsets.{task_name}")
    capacity = (
        sum(m.capacity for m in members)
        if members
        else _integer(fields.get("capacity", 1), f"{where}.capacity")
    )
    client = ClientState(name, capacity, frozenset(active), frozenset(standby), offsets)
    return client, members


def _member(name: str, spec: object, where: str, tasks: Mapping[TaskId, int | None]) -> Member:
    fields = _mapping(spec, where)
    _only(fields, ("capacity", "active", "standby"), where)
    capacity = _integer(fields.get("capacity", 1), f"{where}.capacity")
    if capacity < 1:
        raise ConfigurationError(f"{where}.capacity: {capacity} must be at least 1")
    active = frozenset(_task_list(fields.get("active", []), f"{where}.active", tasks))
    standby = frozenset(_task_list(fields.get("standby", []), f"{where}.standby", tasks))
    return Member(name, capacity, active, standby)


def _task_list(value: object, where: str, tasks: Mapping[TaskId, int | None]) -> list[TaskId]:
    if not isinstance(value, list):
        raise ConfigurationError(f"{where}: expected a list of task ids, got {value!r}")
    return [_known(name, where, tasks) for name in value]


def _known(name: object, where: str, tasks: Mapping[TaskId, int | None]) -> TaskId:
    task = _task_id(name, where)
    if task not in tasks:
        raise ConfigurationError(f'{where}: task {name} is not listed under "tasks"')
    return task


def _task_id(name: object, where: str) -> TaskId:
    if not isinstance(name, str):
        raise ConfigurationError(f"{where}: task id {name!r} is not a string")
    try:
        return TaskId.parse(name)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _only(fields: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key {unknown[0]!r} (expected one of {', '.join(allowed)})"
        )


def _integer(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{where}: expected an integer, got {value!r}")
    return value
