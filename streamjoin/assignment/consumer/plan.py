"""`plan(scenario)`: what an assignor would do to a group, as JSON-shaped data.

The engine of `streamjoin plan`, an operator's what-if tool: given topics, members and what they
own now, it runs the assignor and reports each member's partitions and a summary (validity,
balance, partitions kept and moved). For `cooperative-sticky` the `assignment` is what members
receive in this rebalance, the summary's figures describe the group after the follow-up
rebalance, and `revoked_now` / `follow_up` list the partitions in transit. `ignored` counts the
owned partitions the assignor left out of account: those of topics that are gone, or that their
owner no longer subscribes to (Kafka's assignors ignore them too).
"""

from __future__ import annotations

import time
from typing import Any

from streamjoin.assignment.consumer.cooperative import CooperativeStep
from streamjoin.assignment.consumer.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.consumer.registry import create_assignor
from streamjoin.assignment.consumer.scenario import Scenario, parse_scenario
from streamjoin.assignment.consumer.sticky.stream_join import StreamJoinStickyAssignor
from streamjoin.assignment.consumer.summary import balance, movement, problems
from streamjoin.assignment.model import GroupAssignment, TopicPartition

__all__ = ("plan",)


def _pairs(partitions: tuple[TopicPartition, ...]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in partitions]


def _per_member(partitions: dict[str, tuple[TopicPartition, ...]]) -> dict[str, list[list[Any]]]:
    return {member: _pairs(partitions[member]) for member in sorted(partitions)}


def plan(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run the scenario's assignor on it and return what `streamjoin plan --json` prints:
    `{"assignor", "assignment": {member: [[topic, partition], ...]}, "assign_ms", "summary"}`.

    `assign_ms` times the pure assign call only. Raises ConfigurationError for a bad scenario.
    """
    parsed = parse_scenario(scenario)
    subscriptions = parsed.subscriptions()
    assignor = create_assignor(parsed.assignor)
    step: CooperativeStep | None = None
    started = time.perf_counter()
    if isinstance(assignor, CooperativeStickyAssignor):
        step = assignor.assign_step(parsed.topics, subscriptions)
        elapsed = time.perf_counter() - started
        now, target = step.assignment, step.target()
    else:
        now = assignor.assign(parsed.topics, subscriptions)
        elapsed = time.perf_counter() - started
        target = now

    eligible = {
        member: [t for t in spec.topics if parsed.topics[t] > 0]
        for member, spec in parsed.members.items()
    }
    found = problems(
        target,
        parsed.topics,
        eligible,
        complete=parsed.assignor != StreamJoinStickyAssignor.name,
        co_partitioned=parsed.assignor == StreamJoinStickyAssignor.name,
    )
    moved = movement(target, {member: spec.owned for member, spec in parsed.members.items()})
    subscribed = {t for topics in eligible.values() for t in topics}
    partitions = sum(parsed.topics[t] for t in subscribed)
    assigned = _assigned_count(target)
    summary: dict[str, Any] = {
        "valid": not found,
        "problems": found,
        "members": len(target),
        "partitions": partitions,
        "assigned": assigned,
        "unassigned": partitions - assigned,
        "balance": balance(target, eligible),
        "kept": moved.kept,
        "moved": moved.moved,
        "released": moved.released,
        "new": moved.new,
        "ignored": _ignored_claims(parsed),
        "moves": [
            {"topic": tp.topic, "partition": tp.partition, "from": list(before), "to": to}
            for tp, before, to in moved.moves
        ],
    }
    if step is not None:
        summary["revoked_now"] = _per_member(step.revoked)
        summary["follow_up"] = _per_member(step.pending)
    return {
        "assignor": parsed.assignor,
        "assignment": {member: _pairs(now[member].partitions) for member in sorted(now)},
        "assign_ms": round(elapsed * 1000, 3),
        "summary": summary,
    }


def _ignored_claims(parsed: Scenario) -> int:
    """Owned partitions of topics that are gone or that their owner no longer subscribes to."""
    return sum(
        1
        for spec in parsed.members.values()
        for tp in spec.owned
        if tp.topic not in spec.topics or tp.partition >= parsed.topics.get(tp.topic, 0)
    )


def _assigned_count(assignment: GroupAssignment) -> int:
    return len({tp for given in assignment.values() for tp in given.partitions})
