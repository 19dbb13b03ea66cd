"""`streamjoin plan`: what would move if the group rebalanced like this? (no broker needed)"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from streamjoin.assignment import plan
from streamjoin.cli import fail
from streamjoin.cli.plan.live import read_group_scenario
from streamjoin.cli.security_options import NOT_GIVEN, SecurityChoice, security_options
from streamjoin.errors import StreamJoinError

__all__ = ("register",)

_MOVES_SHOWN = 20


def _ranges(numbers: list[int]) -> str:
    """`[0, 1, 2, 5]` -> `0-2, 5`."""
    parts: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(parts)


def _compact(pairs: list[list[Any]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return "; ".join(f"{t}: {_ranges(sorted(ps))}" for t, ps in sorted(by_topic.items())) or "-"


def _render(result: dict[str, Any]) -> str:
    summary = result["summary"]
    lines = [f"assignor {result['assignor']}    assign {result['assign_ms']:.3f} ms", ""]
    assignment = result["assignment"]
    width = max((len(m) for m in assignment), default=6)
    for member, pairs in assignment.items():
        lines.append(f"  {member:<{width}}  {len(pairs):>6}  {_compact(pairs)}")
    balance = summary["balance"]
    lines += [
        "",
        "valid" if summary["valid"] else "INVALID",
        *(f"  - {problem}" for problem in summary["problems"]),
        f"partitions   {summary['partitions']} ({summary['assigned']} assigned, "
        f"{summary['unassigned']} unassigned) over {summary['members']} members",
        f"balance      min {balance['min']}, max {balance['max']}, spread {balance['spread']} "
        f"({'balanced' if balance['balanced'] else 'NOT balanced'})",
        f"owned before {summary['kept']} kept, {summary['moved']} moved, "
        f"{summary['released']} released; {summary['new']} newly assigned",
    ]
    for move in summary["moves"][:_MOVES_SHOWN]:
        source = "+".join(move["from"])
        lines.append(f"  {move['topic']}-{move['partition']}: {source} -> {move['to']}")
    if len(summary["moves"]) > _MOVES_SHOWN:
        lines.append(f"  ... and {len(summary['moves']) - _MOVES_SHOWN} more moves")
    for key, title in (("revoked_now", "revoked now"), ("follow_up", "follow-up gives")):
        if key in summary:
            lines.append(f"{title:<12} {'' if summary[key] else 'nothing'}".rstrip())
            lines += [f"  {m}: {_compact(pairs)}" for m, pairs in summary[key].items()]
    return "\n".join(lines)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        fail(f"cannot read scenario {path}: {exc.strerror or exc}")
    except json.JSONDecodeError as exc:
        fail(f"scenario {path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")


def _what_if(scenario: Any, assignor: str | None, join: list[str], leave: list[str]) -> Any:
    """Apply --assignor, --leave and --join to a scenario (left alone if it is malformed)."""
    if not isinstance(scenario, dict) or not isinstance(scenario.get("members"), dict):
        return scenario
    members: dict[str, Any] = dict(scenario["members"])
    for member in leave:
        if members.pop(member, None) is None:
            fail(f"--leave {member}: no such member (members: {', '.join(sorted(members))})")
    group_topics = sorted(
        {t for spec in members.values() if isinstance(spec, dict) for t in spec.get("topics", [])}
    )
    for member in join:
        if member in members:
            fail(f"--join {member}: that member is already in the group")
        members[member] = {"topics": group_topics}
    changed = {**scenario, "members": members}
    if assignor is not None:
        changed["assignor"] = assignor
    return changed


def plan_command(
    scenario_path: Annotated[
        Path | None,
        typer.Argument(metavar="SCENARIO.json", help="Scenario file (omit with --from-group)."),
    ] = None,
    *,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    from_group: Annotated[
        str | None,
        typer.Option("--from-group", metavar="GROUP", help="Read a live group, not a file."),
    ] = None,
    bootstrap: Annotated[
        str | None,
        typer.Option("--bootstrap", metavar="HOST:PORT", help="Broker for --from-group."),
    ] = None,
    assignor: Annotated[
        str | None,
        typer.Option(
            "--assignor",
            metavar="NAME",
            help="Plan with this assignor instead of the scenario's: range, roundrobin, fair, "
            "sticky, cooperative-sticky or stream-join-sticky.",
        ),
    ] = None,
    join: Annotated[
        list[str] | None,
        typer.Option("--join", metavar="MEMBER", help="What if this member joined (repeatable)."),
    ] = None,
    leave: Annotated[
        list[str] | None,
        typer.Option("--leave", metavar="MEMBER", help="What if this member left (repeatable)."),
    ] = None,
    tasks: Annotated[
        bool,
        typer.Option("--tasks", help="SCENARIO.json is a task scenario: plan streamjoin's tasks."),
    ] = False,
    security: SecurityChoice = NOT_GIVEN,
) -> None:
    """Show each member's partitions, balance and what would move, for a consumer group."""
    if tasks:
        if assignor is not None:
            fail("--assignor does not apply to --tasks: tasks are placed by the task assignor")
        # Imported on use: the task planner is optional for the consumer-group plan.
        planner = importlib.import_module("streamjoin.cli.plan.tasks")
        if scenario_path is not None and from_group is None:
            planner.run_task_plan(scenario_path, as_json, join=join or [], leave=leave or [])
            return
        if scenario_path is not None or bootstrap is None:
            fail(
                "give either a task SCENARIO.json file or --from-group GROUP --bootstrap HOST:PORT"
            )
        try:
            raw = read_group_scenario(str(from_group), bootstrap, tasks=True)
        except StreamJoinError as exc:
            fail(str(exc))
        planner.print_task_plan(
            raw, f"group {from_group}", as_json, join=join or [], leave=leave or []
        )
        return
    if (scenario_path is None) == (from_group is None):
        fail("give either a SCENARIO.json file or --from-group GROUP --bootstrap HOST:PORT")
    if scenario_path is not None:
        scenario = _load(scenario_path)
    else:
        if bootstrap is None:
            fail("--from-group needs --bootstrap HOST:PORT")
        try:
            scenario = read_group_scenario(str(from_group), security.connection(bootstrap))
        except StreamJoinError as exc:
            fail(str(exc))
    try:
        result = plan(_what_if(scenario, assignor, join or [], leave or []))
    except StreamJoinError as exc:
        fail(str(exc))
    typer.echo(json.dumps(result, indent=2) if as_json else _render(result))


def register(app: typer.Typer) -> None:
    app.command("plan")(security_options(plan_command))
