"""One snapshot of a streamjoin worker group for `streamjoin status`: what the group itself says
(DescribeGroups: each member's subscription and assignment, decoded with streamjoin's own
codecs) joined with what each worker answered at its `/status` (live figures, rebalances).

The group alone gives the members, their process ids and capacities, and every task's active,
standbys and learners; a worker that does not answer only leaves its live figures out, and the
snapshot names it in `unanswered`. The JSON of `--format json` is this module's output:

    {"group", "state", "protocol", "rebalance_protocol", "generation", "leader", "at_ms",
     "members": [{"member_id", "worker", "host", "client_id", "process_id", "processes",
                  "capacity", "status_url", "answered", "pid", "joined_at_ms", "generation",
                  "leader", "last_commit_ms", "active", "standby", "learner"}],
     "tasks": [{"task", "name", "active": [ROLE], "standbys": [ROLE], "learners": [ROLE]}],
     "rebalances": [{"generation", "at_ms", "reasons", "took_s",
                     "moves": [{"task", "name", "worker", "from", "to", "pause_s"}]}],
     "unanswered": [{"worker", "url", "reason"}], "notes": [...]}

ROLE is {"member_id", "worker"} and the worker's figures for the task when it answered:
"state", "changelog_lag", "restore_rate", "eta_s" (learners, warm-ups, restoring actives),
"input_lag", "records_per_s", "late_records", "dead_letters" (actives), "last_commit_ms",
and for learners "followup": {"on_catch_up", "probing_at_ms"}.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.consumer.consumer_protocol import decode_assignment, decode_subscription
from streamjoin.assignment.task_metadata import (
    AssignmentInfo,
    SubscriptionInfo,
    decode_assignment_info,
    decode_subscription_info,
)
from streamjoin.errors import ProtocolDecodeError
from streamjoin.kafka.groups import GroupDescription

__all__ = ("GroupMember", "decode_members", "group_snapshot")

REBALANCES_SHOWN = 8
_ROLE_KEYS = {"active": "active", "standby": "standbys", "learner": "learners"}
_NO_METADATA = "no metadata"


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member as DescribeGroups tells it, decoded (`error`: why it could not be)."""

    member_id: str
    client_id: str
    host: str
    info: SubscriptionInfo | None = None
    told: AssignmentInfo | None = None
    error: str | None = None
    live: dict[str, Any] = field(default_factory=dict)
    """Its entry in its worker's /status answer (empty: none)."""


def decode_members(described: GroupDescription) -> list[GroupMember]:
    members = []
    for member_id, client_id, host, metadata, assignment in described.members:
        if not metadata:
            members.append(GroupMember(member_id, client_id, host, error=_NO_METADATA))
            continue
        try:
            info = decode_subscription_info(decode_subscription(metadata).user_data)
            told = decode_assignment_info(decode_assignment(assignment).user_data)
        except ProtocolDecodeError as exc:
            members.append(GroupMember(member_id, client_id, host, error=str(exc)))
            continue
        members.append(GroupMember(member_id, client_id, host, info, told))
    return sorted(members, key=lambda m: (m.info.process_id if m.info else "", m.member_id))


def worker_label(process_id: str | None, index: int | None, processes: int) -> str:
    """A short name for a worker: its process id's first 8 characters (`.index` when it runs
    several processes)."""
    short = (process_id or "?")[:8]
    return short if processes <= 1 or index is None else f"{short}.{index}"


def group_snapshot(
    group: str,
    described: GroupDescription,
    members: Sequence[GroupMember],
    answers: Mapping[str, dict[str, Any] | str],
    now_ms: int,
) -> dict[str, Any]:
    """The snapshot: `answers` holds each status URL's /status document or why it gave none."""
    live = {
        m["member_id"]: m
        for answer in answers.values()
        if isinstance(answer, dict)
        for m in answer.get("members", [])
    }
    counts: defaultdict[str, int] = defaultdict(int)
    for member in members:
        if member.info is not None:
            counts[member.info.process_id] += 1
    rows = [_member_row(m, live.get(m.member_id, {}), counts) for m in members]
    leader = next((r["member_id"] for r in rows if r.get("leader")), None)
    generations = [r["generation"] for r in rows if r.get("generation") is not None]
    protocols = {m["protocol"] for m in live.values() if m.get("protocol")}
    return {
        "group": group,
        "state": described.state,
        "protocol": described.protocol
        or next((m["assignor"] for m in live.values() if m.get("assignor")), None),
        "rebalance_protocol": min(protocols) if len(protocols) == 1 else None,
        "generation": max(generations, default=None),
        "leader": leader,
        "at_ms": now_ms,
        "members": rows,
        "tasks": _tasks(members, rows, live),
        "rebalances": _rebalances(rows, live),
        "unanswered": _unanswered(members, rows, answers),
        "notes": _notes(group, described, members),
    }


def _member_row(
    member: GroupMember, live: Mapping[str, Any], counts: Mapping[str, int]
) -> dict[str, Any]:
    info = member.info
    processes = counts.get(info.process_id, 1) if info else 1
    row: dict[str, Any] = {
        "member_id": member.member_id,
        "worker": worker_label(info.process_id if info else None, live.get("index"), processes),
        "host": member.host.lstrip("/"),
        "client_id": member.client_id,
        "process_id": info.process_id if info else None,
        "processes": processes,
        "capacity": info.capacity if info else None,
        "status_url": info.status_url if info else None,
        "answered": bool(live),
    }
    for key in ("pid", "joined_at_ms", "generation", "leader", "last_commit_ms"):
        row[key] = live.get(key)
    told = member.told
    for role in ("active", "standby", "learner"):
        if told is not None:
            row[role] = [str(t) for t in getattr(told, role)]
        else:  # the broker described no assignment: the worker's own word
            row[role] = [t for t, f in live.get("tasks", {}).items() if f.get("role") == role]
    if info is None and live:
        row["process_id"], row["capacity"] = live.get("process_id"), live.get("capacity")
        row["worker"] = worker_label(row["process_id"], live.get("index"), 1)
    if member.error and member.error != _NO_METADATA:
        row["error"] = member.error
    return row


def _tasks(
    members: Sequence[GroupMember], rows: Sequence[dict[str, Any]], live: Mapping[str, Any]
) -> list[dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {}
    for member, row in zip(members, rows, strict=True):
        figures = live.get(member.member_id, {})
        for role, key in _ROLE_KEYS.items():
            for task in row[role]:
                entry = tasks.setdefault(
                    task, {"task": task, "name": None, "active": [], "standbys": [], "learners": []}
                )
                found = figures.get("tasks", {}).get(task, {})
                entry["name"] = entry["name"] or found.get("name")
                entry[key].append(_role(member, row, figures, found, role))
    return [tasks[t] for t in sorted(tasks, key=_task_order)]


def _task_order(task: str) -> tuple[int, int]:
    sub, _, partition = task.partition("_")
    return (int(sub), int(partition)) if sub.isdigit() and partition.isdigit() else (0, 0)


def _role(
    member: GroupMember,
    row: Mapping[str, Any],
    figures: Mapping[str, Any],
    found: Mapping[str, Any],
    role: str,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"member_id": member.member_id, "worker": row["worker"]}
    entry.update({k: v for k, v in found.items() if k not in ("name", "role")})
    if role == "active" and figures:
        entry["last_commit_ms"] = figures.get("last_commit_ms")
    if role == "learner":
        probe = member.told.next_probe_ms if member.told else -1
        entry["followup"] = {
            "on_catch_up": figures.get("followup_on_catch_up"),
            "probing_at_ms": probe if probe >= 0 else None,
        }
    return entry


def _rebalances(rows: Sequence[Mapping[str, Any]], live: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every worker's history of one generation together: the reasons any of them knows (a
    bare "group" only when none knows more), the moves each saw, the longest time taken."""
    merged: dict[int, dict[str, Any]] = {}
    for row in rows:
        for seen in live.get(row["member_id"], {}).get("rebalances", []):
            entry = merged.setdefault(
                seen["generation"],
                {
                    "generation": seen["generation"],
                    "at_ms": seen["at_ms"],
                    "reasons": set(),
                    "took_s": 0.0,
                    "moves": [],
                },
            )
            entry["at_ms"] = min(entry["at_ms"], seen["at_ms"])
            entry["reasons"].update(seen["reasons"])
            entry["took_s"] = max(entry["took_s"], seen.get("took_s", 0.0))
            names = live[row["member_id"]].get("tasks", {})
            for task, (before, after) in seen.get("moved", {}).items():
                entry["moves"].append(
                    {
                        "task": task,
                        "name": names.get(task, {}).get("name"),
                        "worker": row["worker"],
                        "from": before,
                        "to": after,
                        "pause_s": seen.get("pauses_s", {}).get(task),
                    }
                )
    shown = sorted(merged.values(), key=lambda e: -e["generation"])[:REBALANCES_SHOWN]
    for entry in shown:
        reasons = entry["reasons"]
        entry["reasons"] = sorted(reasons - {"group"} if len(reasons) > 1 else reasons)
        entry["moves"].sort(key=lambda m: (_task_order(m["task"]), m["worker"]))
    return shown


def _unanswered(
    members: Sequence[GroupMember],
    rows: Sequence[Mapping[str, Any]],
    answers: Mapping[str, dict[str, Any] | str],
) -> list[dict[str, Any]]:
    missing: dict[str, dict[str, Any]] = {}
    for member, row in zip(members, rows, strict=True):
        if row["answered"] or member.info is None:
            continue
        url = member.info.status_url
        answer = answers.get(url) if url else None
        if url is None:
            reason = "advertises no status URL (started without --metrics-port?)"
        elif isinstance(answer, str):
            reason = answer
        else:
            reason = "its endpoint did not list this member"
        missing.setdefault(row["worker"], {"worker": row["worker"], "url": url, "reason": reason})
    known = {m.info.status_url for m in members if m.info is not None}
    for url, answer in sorted(answers.items()):
        if isinstance(answer, str) and url not in known:  # a --worker URL
            missing.setdefault(url, {"worker": "?", "url": url, "reason": answer})
    return list(missing.values())


def _notes(group: str, described: GroupDescription, members: Sequence[GroupMember]) -> list[str]:
    notes = []
    if not members:
        notes.append(f"group {group!r} has no members (state {described.state})")
    elif described.protocol_type != "consumer":
        notes.append(f"group {group!r} is not a consumer group ({described.protocol_type!r})")
    if any(m.error == _NO_METADATA for m in members):
        notes.append(
            "the broker described the members without their subscriptions and assignments "
            "(as the embedded broker does): roles come from the workers that answered, and "
            "only those named with --worker URL can"
        )
    if described.state != "Stable" and members:
        notes.append(f"the group is {described.state}, not Stable: assignments may be changing")
    return notes
