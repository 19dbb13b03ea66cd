"""`streamjoin plan --tasks SCENARIO.json`: what the task assignor would do (no broker needed).

Called by the `plan` command; prints every client's roles and the moves still under way, or
with `--json` exactly what `streamjoin.assignment.plan_tasks` returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import typer

from streamjoin.assignment.tasks.checks import problems, spreads
from streamjoin.assignment.tasks.model import (
    ClientAssignment,
    PendingMove,
    Role,
    TaskAssignment,
    TaskId,
    Warmup,
)
from streamjoin.assignment.tasks.scenario import (
    TaskScenario,
    parse_scenario,
    plan_tasks,
    timed_assignment,
)
from streamjoin.cli import fail
from streamjoin.errors import StreamJoinError

__all__ = ("print_task_plan", "run_task_plan")

_MOVES_SHOWN = 20


def run_task_plan(
    path: Path, as_json: bool, *, join: Sequence[str] = (), leave: Sequence[str] = ()
) -> None:
    """Read a task scenario file and print its plan, with the clients of `join` added (no
    state, capacity 1) and those of `leave` gone; bad input exits with status 2."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        fail(f"{path} is not valid JSON: {exc}")
    print_task_plan(raw, str(path), as_json, join=join, leave=leave)


def print_task_plan(
    raw: Any, where: str, as_json: bool, *, join: Sequence[str] = (), leave: Sequence[str] = ()
) -> None:
    """Print the plan of a task scenario read from `where` (a file, a live group)."""
    raw = _what_if(raw, join, leave)
    try:
        if as_json:
            typer.echo(json.dumps(plan_tasks(raw), indent=2))
            return
        scenario = parse_scenario(raw)
        assignment, elapsed_ms = timed_assignment(scenario)
    except StreamJoinError as exc:
        fail(f"{where}: {exc}")
    typer.echo(_render(scenario, assignment, elapsed_ms))


def _what_if(raw: Any, join: Sequence[str], leave: Sequence[str]) -> Any:
    """The scenario with clients joining and leaving (a malformed one is left to the parser)."""
    if not (join or leave) or not isinstance(raw, dict) or not isinstance(raw.get("clients"), dict):
        return raw
    clients = dict(raw["clients"])
    for client in leave:
        if clients.pop(client, None) is None:
            fail(f"--leave {client}: no such client (clients: {', '.join(sorted(clients))})")
    for client in join:
        if client in clients:
            fail(f"--join {client}: that client is already in the scenario")
        clients[client] = {}
    return {**raw, "clients": clients}


def _render(scenario: TaskScenario, assignment: TaskAssignment, elapsed_ms: float) -> str:
    settings = scenario.settings
    capacity = {client.process_id: client.capacity for client in scenario.clients}
    members = {m.name: m.capacity for listed in scenario.members.values() for m in listed}
    spread = scenario.spread(assignment)
    rows = [("client", "slots", "active", "standby", "learner")]

    def row(name: str, slots: int, roles: ClientAssignment) -> tuple[str, str, str, str, str]:
        return (
            name,
            str(slots),
            f"{len(roles.active):>3}  {_compact(roles.active)}",
            f"{len(roles.standby):>3}  {_compact(roles.standby)}",
            _compact(roles.learner),
        )

    for client, roles in sorted(assignment.clients.items()):
        rows.append(row(client, capacity[client], roles))
        for member, member_roles in spread.get(client, {}).items():
            rows.append(row(f"  member {member}", members[member], member_roles))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        f"task assignor    assign {elapsed_ms:.3f} ms    "
        f"acceptable lag {settings.acceptable_recovery_lag}, "
        f"warm-ups {settings.max_warmup_replicas}, standbys {settings.num_standby_replicas}",
        "",
        *(
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ),
        "",
    ]
    found = problems(assignment, scenario.tasks, settings)
    lines += ["valid" if not found else "INVALID", *(f"  - {problem}" for problem in found)]
    balance = spreads(assignment, scenario.tasks, capacity)
    lines.append(
        f"spread per slot: actives {balance.active:.2f}, stateful copies {balance.stateful:.2f}, "
        f"worst subtopology {balance.subtopology:.2f}"
    )
    if not assignment.followup:
        lines.append("stable: no follow-up rebalance needed")
        return "\n".join(lines)
    pending = assignment.pending
    lines.append(f"follow-up rebalance needed: {len(pending)} moves under way")
    lines.extend(f"  {_describe(move)}" for move in pending[:_MOVES_SHOWN])
    if len(pending) > _MOVES_SHOWN:
        lines.append(f"  ... and {len(pending) - _MOVES_SHOWN} more")
    return "\n".join(lines)


_HOW = {
    Warmup.LEARNER: "warming up as a learner",
    Warmup.STANDBY: "warming up as its standby",
    Warmup.WAITING: "waiting for warm-up budget",
}


def _describe(move: PendingMove) -> str:
    role = "active " if move.role is Role.ACTIVE else "standby"
    return f"{move.task} {role} on {move.holder}, bound for {move.target} ({_HOW[move.warmup]})"


def _compact(tasks: Iterable[TaskId]) -> str:
    """`0_0, 0_1, 0_2, 0_5, 1_0` -> `0_0-2, 0_5, 1_0`."""
    by_subtopology: dict[int, list[int]] = {}
    for task in tasks:
        by_subtopology.setdefault(task.subtopology, []).append(task.partition)
    parts: list[str] = []
    for subtopology, partitions in sorted(by_subtopology.items()):
        ordered = sorted(partitions)
        start = previous = ordered[0]
        for number in [*ordered[1:], None]:
            if number is not None and number == previous + 1:
                previous = number
                continue
            parts.append(f"{subtopology}_{start}" + (f"-{previous}" if previous != start else ""))
            if number is not None:
                start = previous = number
    return ", ".join(parts) or "-"
