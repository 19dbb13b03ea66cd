"""An app compiled into its topology: sub-topologies connected by topics, in the order data
flows, with the partition count of every topic they read and write.

A join reads its two inputs; a `key_by` runs stateless, reading the topic before it and writing
its repartition topic; a join whose output another join reads comes before that join. A cycle (a
join whose output reaches its own input) is refused. Joins and key_bys that read a common topic
are one sub-topology (Kafka Streams' node groups), so one task owns each partition of it.
Pure: partition counts of existing topics come in (from the broker, or the test driver).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec, Repartition
from streamjoin.errors import ConfigurationError

__all__ = ("Topology", "compile_topology", "group_name", "join_order", "subtopology_groups")


@dataclass(frozen=True, slots=True)
class Topology:
    """`partitions`: every topic the app reads or writes -> its partition count (None where it
    is not known yet: a source topic without a declared count, when compiled without a broker).
    `tasks`: sub-topology name (a join's, or a repartition's "<name>-repartition") -> its
    number of tasks (its source's partition count)."""

    app: App
    joins: tuple[JoinSpec, ...]
    """In the order data flows: a join comes after every join whose output it reads."""
    repartitions: tuple[Repartition, ...]
    partitions: Mapping[str, int | None]
    tasks: Mapping[str, int | None]
    groups: tuple[tuple[str, ...], ...]
    """The sub-topologies, as `subtopology_groups` gives them."""


def _units(app: App) -> dict[str, tuple[str, ...]]:
    """Each join (by name) and key_by (by its "<name>-repartition"), in the order sub-topologies
    were always numbered (joins, then key_bys, each in name order) -> the topics its tasks read."""
    units = {spec.name: spec.input_topics for spec in sorted(app.joins, key=lambda s: s.name)}
    for repartition in sorted(app.repartitions, key=lambda r: r.subtopology):
        units[repartition.subtopology] = (repartition.source.name,)
    return units


def subtopology_groups(app: App) -> tuple[tuple[str, ...], ...]:
    """The app's sub-topologies: the joins and key_bys (their sub-topology names) connected
    through the topics they read, transitively (a repartition topic counts). Two tasks reading
    one partition on two workers would each fetch and commit it for themselves; as one task they
    commit it once. Numbered by their first member in the former order, so an app where no two
    read the same topic keeps its sub-topology numbers and names (and its task ids, its state)."""
    units = _units(app)
    parent = {name: name for name in units}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    order = {name: index for index, name in enumerate(units)}
    first_reader: dict[str, str] = {}
    for name, topics in units.items():
        for topic in topics:
            a, b = sorted(
                (root(first_reader.setdefault(topic, name)), root(name)), key=order.__getitem__
            )
            parent[b] = a  # the root is always a group's first member
    groups: dict[str, list[str]] = {}
    for name in units:
        groups.setdefault(root(name), []).append(name)
    for members in groups.values():
        merged = group_name(members)
        if len(members) > 1 and merged in units:
            raise ConfigurationError(
                f"{merged!r} names a join or key_by and also the sub-topology of {members} (they "
                "read a common topic): rename it, since task ids and state directories would clash"
            )
    return tuple(tuple(members) for members in groups.values())


def group_name(members: Sequence[str]) -> str:
    """A sub-topology's name: its one member's, or its members' joined by "." (a task id is
    a directory name: letters, digits, ".", "_", "-")."""
    return ".".join(members)


def _producers(app: App) -> dict[str, str]:
    """Topic -> what writes it inside the app ("join 'x'" or "key_by 'y'")."""
    writers = {spec.into.name: f"join {spec.name!r}" for spec in app.joins}
    writers.update({r.topic.name: f"key_by {r.name!r}" for r in app.repartitions})
    return writers


def join_order(app: App) -> tuple[JoinSpec, ...]:
    """The joins in the order data flows through them (ties in name order); a cycle raises a
    ConfigurationError naming its joins and the topics that connect them."""
    joins = {spec.name: spec for spec in app.joins}
    by_output = {spec.into.name: spec.name for spec in app.joins}
    repartition_of = {r.topic.name: r for r in app.repartitions}

    def upstream(topic: str, via: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
        """(join writing `topic` or a topic before it, the topics in between) pairs."""
        if topic in by_output:
            return [(by_output[topic], (topic, *via))]
        if topic in repartition_of:
            return upstream(repartition_of[topic].source.name, (topic, *via))
        return []

    feeds = {
        name: sorted({u for t in spec.input_topics for u in upstream(t)})
        for name, spec in sorted(joins.items())
    }
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[tuple[str, tuple[str, ...]]] = []

    def visit(name: str, via: tuple[str, ...]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            start = next(i for i, (n, _) in enumerate(path) if n == name)
            _refuse_cycle([*path[start:], (name, via)])
        state[name] = 1
        path.append((name, via))
        for before, topics in feeds[name]:
            visit(before, topics)
        path.pop()
        state[name] = 2
        order.append(name)

    for name in sorted(joins):
        visit(name, ())
    return tuple(joins[n] for n in order)


def _refuse_cycle(path: list[tuple[str, tuple[str, ...]]]) -> None:
    """`path`: joins from the first reader back up to a writer of its input, each with the
    topics through which the previous one reads it."""
    joins = [name for name, _ in path]
    links = []
    for (reader, _), (writer, topics) in itertools.pairwise(path):
        through = " -> ".join(repr(t) for t in topics)
        links.append(f"join {writer!r} writes {through}, read by join {reader!r}")
    raise ConfigurationError(
        "the joins form a cycle ("
        + " <- ".join(repr(j) for j in joins)
        + "): "
        + "; ".join(links)
        + ". A join's output may not reach its own input"
    )


def _missing_input(
    app: App,
    topic: str,
    readers: list[tuple[JoinSpec, int]],
    repartitions: Sequence[Repartition],
    existing: Mapping[str, int],
) -> str:
    """What to do about a source topic that does not exist, with the command that creates it
    (its partition count: declared, else that of the other side of its join)."""
    wanted = [f"join {spec.name!r}" for spec, _ in readers]
    wanted += [f"key_by {r.name!r}" for r in repartitions if r.source.name == topic]
    global_readers = [
        f"join {s.name!r}" for s in app.joins if s.is_global and s.right.name == topic
    ]
    wanted += global_readers
    others = [spec.right.name if index == 0 else spec.left.name for spec, index in readers]
    counts = [_declared(app, topic)]
    counts += [existing.get(other) or _declared(app, other) for other in others]
    hint = next((n for n in counts if n), "N")
    count = (
        "any partition count: every worker reads a global table whole"
        if global_readers
        else "as many partitions as the other side of its join"
    )
    return (
        f"{', '.join(wanted)}: input topic {topic!r} does not exist; create it with "
        f"`streamjoin topics create {topic} --partitions {hint}` ({count}), or start the "
        "worker with --create-topics"
    )


def compile_topology(
    app: App, existing: Mapping[str, int], *, require_sources: bool = True
) -> Topology:
    """The app's topology with partition counts. `existing`: counts of topics that exist (the
    broker's; the driver's). A source topic neither existing nor declared is an error when
    `require_sources`, else its count stays None (`describe` without a broker).

    A sub-topology's source topics all have one partition count (Kafka Streams' rule), as its
    task p reads partition p of each: every join's two inputs are checked alike, a key_by has
    one, and its members share topics, so that follows from the joins' own check."""
    if not app.joins:
        raise ConfigurationError(f"app {app.app_id!r} declares no joins: nothing to run")
    joins = join_order(app)
    repartitions = app.repartitions
    writers = _producers(app)
    by_output = {spec.into.name: spec for spec in joins}
    repartition_of = {r.topic.name: r for r in repartitions}
    copies = app.foreign_key_topics
    readers: dict[str, list[tuple[JoinSpec, int]]] = {}
    for spec in joins:
        for index, topic in enumerate(spec.input_topics):
            readers.setdefault(topic, []).append((spec, index))
    problems: list[str] = []
    counts: dict[str, int | None] = {}

    def count(topic: str) -> int | None:
        if topic not in counts:
            counts[topic] = None  # no cycle can reach here again (refused above)
            counts[topic] = _count(topic)
        return counts[topic]

    def _count(topic: str) -> int | None:
        if topic in copies:  # a foreign-key join's internal topic: as its table
            return count(copies[topic])
        if topic in repartition_of:
            return repartition_count(repartition_of[topic])
        if topic in existing:
            return existing[topic]
        if topic in by_output:
            spec = by_output[topic]
            return spec.into.partitions or count(spec.left.name)
        declared = _declared(app, topic)
        if require_sources:  # a source must exist, declared or not (its count is then checked)
            problems.append(
                _missing_input(app, topic, readers.get(topic, []), repartitions, existing)
            )
        return declared

    def repartition_count(repartition: Repartition) -> int | None:
        if repartition.key_by.partitions is not None:
            return repartition.key_by.partitions
        for spec, index in readers.get(repartition.topic.name, []):
            if spec.is_global:
                continue  # the global table has any partition count
            other = spec.input_topics[1 - index]
            other_rep = repartition_of.get(other)
            if other_rep is None or other_rep.key_by.partitions is not None:
                return count(other)
            # Both sides re-keyed, neither with a count: the larger of their sources' counts.
            sources = [count(repartition.source.name), count(other_rep.source.name)]
            known = [c for c in sources if c is not None]
            return max(known) if known else None
        return count(repartition.source.name)  # read by another key_by only

    tasks: dict[str, int | None] = {}
    for spec in joins:
        left, right = count(spec.left.name), count(spec.right.name)
        if not spec.is_global and left is not None and right is not None and left != right:
            seen_left = _as_seen(spec.left.name, writers)
            seen_right = _as_seen(spec.right.name, writers)
            problems.append(
                f"join {spec.name!r}: inputs are not co-partitioned: {seen_left} has {left} "
                f"partitions, {seen_right} has {right}; give both the same partition count and "
                "partition them by the same key"
            )
        tasks[spec.name] = left if left is not None else right
        count(spec.into.name)
    for repartition in repartitions:
        if repartition.subtopology in tasks:
            problems.append(
                f"join {repartition.subtopology!r} has the name of the sub-topology of key_by "
                f"{repartition.name!r}; rename one of them"
            )
        tasks[repartition.subtopology] = count(repartition.source.name)
        count(repartition.topic.name)
    problems += _declared_mismatches(app, existing, repartition_of)
    if problems:
        raise ConfigurationError("; ".join(dict.fromkeys(problems)))
    return Topology(app, joins, repartitions, counts, tasks, subtopology_groups(app))


def _declared_mismatches(
    app: App, existing: Mapping[str, int], internal: Mapping[str, Repartition]
) -> list[str]:
    """Declared partition counts that the existing topics contradict."""
    return [
        f"topic {topic!r} is declared with {declared} partitions but has {actual}"
        for topic, declared in _declared_counts(app).items()
        if (actual := existing.get(topic)) is not None
        and topic not in internal
        and actual != declared
    ]


def _as_seen(topic: str, writers: Mapping[str, str]) -> str:
    writer = writers.get(topic)
    return repr(topic) if writer is None else f"{topic!r} (written by {writer})"


def _declared_counts(app: App) -> dict[str, int]:
    topics = [t for spec in app.joins for t in (spec.left, spec.right, spec.into)]
    topics += [r.source for r in app.repartitions]
    return {t.name: t.partitions for t in topics if t.partitions is not None}


def _declared(app: App, topic: str) -> int | None:
    return _declared_counts(app).get(topic)
