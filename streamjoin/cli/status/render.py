"""The terminal view of a snapshot (snapshot.py): the group, its workers, every task with its
owner, standbys and learners, the last rebalances, and one line naming the workers that did
not answer. Plain rich tables: the same text in a live terminal, `--once` and a pipe."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ("render",)

_NONE = "-"


def render(snapshot: Mapping[str, Any]) -> RenderableType:
    parts: list[RenderableType] = [_header(snapshot)]
    parts += [Text(f"note: {note}", style="yellow") for note in snapshot["notes"]]
    if snapshot["members"]:
        parts += [_workers(snapshot), _tasks(snapshot), _rebalances(snapshot)]
    unanswered = snapshot["unanswered"]
    if unanswered:
        said = "; ".join(
            f"{u['worker']} ({u['url'] or 'no URL'}: {u['reason']})" for u in unanswered
        )
        parts.append(Text(f"did not answer: {said}", style="red"))
    return Group(*parts)


def _header(snapshot: Mapping[str, Any]) -> Text:
    leader = next(
        (m["worker"] for m in snapshot["members"] if m["member_id"] == snapshot["leader"]), _NONE
    )
    protocol = snapshot["protocol"] or _NONE
    if snapshot["rebalance_protocol"]:
        protocol += f" ({snapshot['rebalance_protocol']})"
    generation = snapshot["generation"]
    return Text.assemble(
        ("group ", "bold"),
        (snapshot["group"], "bold cyan"),
        f"  {snapshot['state']}  generation {_NONE if generation is None else generation}",
        f"  protocol {protocol}  leader {leader}  at {_clock(snapshot['at_ms'])}",
    )


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _workers(snapshot: Mapping[str, Any]) -> Table:
    table = _table(
        "workers (* leader)",
        "worker",
        "host",
        "pid",
        "processes",
        "capacity",
        "joined",
        "last commit",
        "active/standby/learner",
    )
    for m in snapshot["members"]:
        roles = f"{len(m['active'])}/{len(m['standby'])}/{len(m['learner'])}"
        table.add_row(
            m["worker"] + (" *" if m["member_id"] == snapshot["leader"] else ""),
            m["host"],
            _text(m["pid"]),
            str(m["processes"]),
            _text(m["capacity"]),
            _clock(m["joined_at_ms"]),
            _clock(m["last_commit_ms"]),
            roles if "error" not in m else f"{roles} ({m['error']})",
        )
    return table


def _tasks(snapshot: Mapping[str, Any]) -> Table:
    table = _table(
        "tasks",
        "task",
        "active",
        "state",
        "input lag",
        "rec/s",
        "late",
        "dead-lettered",
        "standbys and learners",
    )
    for task in snapshot["tasks"]:
        name = task["task"] + (f" {task['name']}" if task["name"] else "")
        active = task["active"][0] if task["active"] else {}
        others = [_copy("standby", s) for s in task["standbys"]]
        others += [_copy("learner", s) for s in task["learners"]]
        table.add_row(
            name,
            active.get("worker", "none"),
            active.get("state", _NONE),
            _number(active.get("input_lag")),
            _number(active.get("records_per_s")),
            _number(active.get("late_records")),
            _number(active.get("dead_letters")),
            "\n".join(others) or _NONE,
        )
    return table


def _copy(role: str, copy: Mapping[str, Any]) -> str:
    """A standby or learner: its lag, restore rate, and for a learner when it will be caught up
    and which rebalance then hands it the task."""
    said = f"{role} {copy['worker']}"
    if "changelog_lag" not in copy:
        return said
    said += f" lag {_number(copy['changelog_lag'])}"
    if copy.get("restore_rate") is not None:
        said += f" at {_number(copy['restore_rate'])}/s"
    eta = copy.get("eta_s")
    if eta is not None:
        said += ", caught up" if eta == 0 else f", ETA {_duration(eta)}"
    followup = copy.get("followup")
    if followup:
        when = "on catch-up" if followup.get("on_catch_up") else "probing only"
        probing = followup.get("probing_at_ms")
        said += f"; follow-up {when}" + (f", probing {_clock(probing)}" if probing else "")
    return said


def _rebalances(snapshot: Mapping[str, Any]) -> Table:
    table = _table("last rebalances", "generation", "at", "why", "took", "moved (output paused)")
    for entry in snapshot["rebalances"]:
        table.add_row(
            str(entry["generation"]),
            _clock(entry["at_ms"]),
            ", ".join(entry["reasons"]),
            _duration(entry["took_s"]),
            _moves(entry["moves"]) or "nothing",
        )
    return table


def _moves(moves: Sequence[Mapping[str, Any]]) -> str:
    """Per task: the active's move (from -> to, and how long its output paused; ? when no
    worker that answered gave it up: a first start, or a worker gone), then the standbys and
    learners that came (+) or went (-)."""
    lines = []
    for task in dict.fromkeys(m["task"] for m in moves):
        mine = [m for m in moves if m["task"] == task]
        gone = [m["worker"] for m in mine if m["from"] == "active" and m["to"] != "active"]
        came = [m for m in mine if m["to"] == "active" and m["from"] != "active"]
        if gone or came:
            line = f"{task} active {'/'.join(gone) or '?'} -> "
            line += "/".join(m["worker"] for m in came) or "none"
            pauses = [m["pause_s"] for m in came if m["pause_s"] is not None]
            lines.append(line + (f" (output paused {_duration(max(pauses))})" if pauses else ""))
        for m in mine:
            if "active" in (m["from"], m["to"]):
                continue  # said above
            for role, sign in ((m["to"], "+"), (m["from"], "-")):
                if role in ("standby", "learner"):
                    lines.append(f"{task} {role} {sign}{m['worker']}")
    return "\n".join(lines)


def _clock(ms: int | None) -> str:
    return _NONE if ms is None else time.strftime("%H:%M:%S", time.localtime(ms / 1000))


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _number(value: float | None) -> str:
    if value is None:
        return _NONE
    return f"{value:,.0f}" if value >= 10 or float(value).is_integer() else f"{value:.1f}"


def _text(value: object) -> str:
    return _NONE if value is None else str(value)
