"""An app's topology as plain data, as Kafka Streams' `Topology.describe()` gives it: every
sub-topology (numbered as the task assignor numbers them) with its source topics, steps,
join processor and stores, and where it writes; and every internal topic with its partition
count. `streamjoin describe` prints it; tools read it as JSON."""

from __future__ import annotations

from typing import Any

from streamjoin.dsl.spec import JoinSpec, Repartition
from streamjoin.dsl.steps import Step
from streamjoin.dsl.topology import Topology
from streamjoin.runtime.output.dead_letters import dead_letter_topic
from streamjoin.runtime.topology.app_topology import AppTopology, store_specs
from streamjoin.state.changelog_topics import store_topic

__all__ = ("describe_topology",)


def describe_topology(topology: Topology) -> dict[str, Any]:
    """{"app", "subtopologies": [...], "internal_topics": [...]}; counts are None where unknown.
    A sub-topology lists its members (the joins and key_bys it runs; several where they read a
    common topic), and its sources once each."""
    app = topology.app
    tasks = {name: count or 0 for name, count in topology.tasks.items()}
    numbered = AppTopology(app, tasks)
    count = topology.partitions.get
    subtopologies: list[dict[str, Any]] = []
    internal: list[dict[str, Any]] = []
    for index, name in enumerate(numbered.names):
        members: list[dict[str, Any]] = []
        for member in numbered.members(name):
            if isinstance(member, JoinSpec):
                entry = _join(member, topology)
                for store in entry["processor"]["stores"]:
                    if store["source_topic"]:
                        continue  # a table's store restores from the table's own topic
                    internal.append(
                        {
                            "topic": store["changelog"],
                            "kind": "changelog",
                            "partitions": topology.tasks[member.name],
                            "of": f"store {store['name']!r}",
                        }
                    )
            else:
                entry = _repartition(member, topology)
                internal.append(
                    {
                        "topic": member.topic.name,
                        "kind": "repartition",
                        "partitions": count(member.topic.name),
                        "of": f"key_by {member.name!r}",
                    }
                )
            members.append(entry)
        subtopologies.append(
            {
                "id": index,
                "name": name,
                "tasks": topology.tasks[members[0]["name"]],
                "kind": members[0]["kind"] if len(members) == 1 else "merged",
                "stateless": all(m["kind"] == "repartition" for m in members),
                "sources": _sources(members),
                "members": members,
            }
        )
    for spec in topology.joins:
        fk = spec.foreign_key
        if fk is not None and fk.side == "left":
            for topic, what in ((fk.subscription, "subscription"), (fk.response, "response")):
                internal.append(
                    {
                        "topic": topic.name,
                        "kind": what,
                        "partitions": count(topic.name),
                        "of": f"foreign-key join {spec.name!r}",
                    }
                )
    internal.append(
        {
            "topic": dead_letter_topic(app.app_id),
            "kind": "dead-letter",
            "partitions": max((c for c in topology.tasks.values() if c is not None), default=None),
            "of": "bad records of every sub-topology",
        }
    )
    readers = {source["topic"]: [sub["id"]] for sub in subtopologies for source in sub["sources"]}
    for sub in subtopologies:
        for member in sub["members"]:
            member["sink"]["read_by"] = readers.get(member["sink"]["topic"], [])
    order = [spec.name for spec in topology.joins]
    return {
        "app": app.app_id,
        "join_order": order,
        "subtopologies": subtopologies,
        "internal_topics": internal,
        "global_tables": _global_tables(topology),
        "warnings": _lateness_warnings(topology),
    }


def _lateness_warnings(topology: Topology) -> list[str]:
    """Joins whose records may come late with nothing to absorb it: a windowed join with no
    grace that reads a side through a key_by."""
    sources = {r.topic.name: r.source.name for r in topology.app.repartitions}
    warnings = []
    for spec in topology.joins:
        rekeyed = [sources[t] for t in spec.input_topics if t in sources]
        if spec.window is None or spec.window.grace_ms or not rekeyed:
            continue
        warnings.append(
            f"join {spec.name!r} has no grace and reads {' and '.join(rekeyed)} through a "
            "key_by: the workers hold the join back until what is on its way through the "
            "repartition topic has arrived, but a record of an input loaded after the other "
            "one, or out of time order within its partition, comes late and misses partners "
            "its store no longer holds; give the join a grace (JoinWindows(grace=...)) that "
            "covers how late such records may be"
        )
    return warnings


def _global_tables(topology: Topology) -> list[dict[str, Any]]:
    """Each global table: its store (on every worker) and the topic it restores from."""
    readers: dict[str, list[str]] = {}
    for spec in topology.joins:
        if spec.is_global:
            readers.setdefault(spec.right.name, []).append(spec.name)
    return [
        {
            "store": f"global/{topic}",
            "source": topic,
            "partitions": topology.partitions.get(topic),
            "read_by": joins,
        }
        for topic, joins in sorted(readers.items())
    ]


def _sources(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each topic the sub-topology reads, once, with who reads it: as which side and after
    which steps ("read_as"; one entry per member reading it)."""
    sources: dict[str, dict[str, Any]] = {}
    for member in members:
        for source in member["sources"]:
            entry = sources.setdefault(
                source["topic"],
                {"topic": source["topic"], "partitions": source["partitions"], "read_as": []},
            )
            entry["read_as"].append(
                {"member": member["name"], "side": source["side"], "steps": source["steps"]}
            )
    return list(sources.values())


def _steps(steps: tuple[Step, ...]) -> list[str]:
    return [step.describe() for step in steps]


def _join(spec: JoinSpec, topology: Topology) -> dict[str, Any]:
    count = topology.partitions.get
    sources = [
        {"topic": topic.name, "partitions": count(topic.name), "side": side, "steps": _steps(steps)}
        for side, topic, steps in (
            ("left", spec.left, spec.left_steps),
            ("right", spec.right, spec.right_steps),
        )
        if side == "left" or not spec.is_global
    ]
    window = spec.window
    processor: dict[str, Any] = {
        "kind": spec.kind,
        "how": spec.how,
        "window": None
        if window is None
        else {
            "before_ms": window.before_ms,
            "after_ms": window.after_ms,
            "grace_ms": window.grace_ms,
        },
        "stores": [
            {
                "name": store.name,
                "kind": store.kind.value,
                "changelog": store_topic(topology.app.app_id, store),
                "source_topic": store.source_topic is not None,
            }
            for store in store_specs(spec)
        ],
    }
    if spec.is_global:
        assert spec.lookup is not None
        processor["global_store"] = f"global/{spec.right.name}"
        processor["lookup"] = spec.lookup.describe().replace("key_by", "key", 1)
    return {
        "name": spec.name,
        "kind": "join",
        "sources": sources,
        "processor": processor,
        "sink": {"topic": spec.into.name, "partitions": count(spec.into.name)},
    }


def _repartition(repartition: Repartition, topology: Topology) -> dict[str, Any]:
    count = topology.partitions.get
    source = repartition.source.name
    return {
        "name": repartition.subtopology,
        "kind": "repartition",
        "sources": [{"topic": source, "partitions": count(source), "side": None, "steps": []}],
        "processor": {
            "kind": "stateless",
            "steps": [*_steps(repartition.steps), repartition.key_by.describe()],
        },
        "sink": {"topic": repartition.topic.name, "partitions": count(repartition.topic.name)},
    }
