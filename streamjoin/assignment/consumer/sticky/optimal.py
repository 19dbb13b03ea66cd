"""The general sticky path's last step: the most balanced spread, then the stickiest within it.

KIP-54's balance (no partition can move to a member with two fewer) is a local rule: with mixed
subscriptions it can leave a spread that a chain of moves would narrow. And moves chosen one at
a time can give up a previously owned partition that a different choice would have kept. Both
are flow problems on an aggregated graph, topics -> members, where only counts matter: member m
holds `kept[m][t]` of its own partitions of topic t (at most what it owned) and `new[m][t]` others
(any partition of t nobody keeps). Any counts that add up per topic can be made into partitions.

1. Narrow the spread: while a member holds a topic from which a chain of moves (each to a member
   that subscribes to the topic moved) reaches a member with two or more fewer, move along it.
   When no such chain exists the loads are the most balanced possible (the least maximum and the
   greatest minimum at once), so the spread is the least any assignment reaches.
   The loads then also have the least sum of squares, which every such assignment shares.
2. Keep the most: cancel negative cycles of the min-cost flow (keeping an own partition costs -1,
   a unit of load its share of the sum of squares, weighted above any stickiness) until there
   are none; then no assignment as balanced keeps more. Sum of squares rather than the spread
   alone: a flatter spread of loads keeps KIP-54's balance (no single move helps) too.
3. Or KIP-54's own loads: where KIP-54's answer is already as narrow (a spread of two or more,
   which other loads can share), its loads may let members keep more than the least sum of
   squares does (Kafka's assignor lands on such loads). Cycles that keep every load and stay
   KIP-54 balanced make it the stickiest it can be, and the better of the two is taken: the
   narrower, then the one that keeps more.

All steps start from KIP-54's answer, which is usually optimal already, so they mostly check.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Sequence

__all__ = ("optimize",)


class _Counts:
    """Per member and topic: own partitions kept, other partitions held, and what it owned."""

    def __init__(
        self,
        topic_at: Sequence[int],
        member_topics: Sequence[Sequence[int]],
        owned: Sequence[Sequence[int]],
        assigned: Sequence[Sequence[int]],
        topics: int,
    ) -> None:
        self.member_topics = member_topics
        self.subscribers: list[list[int]] = [[] for _ in range(topics)]
        for member, subscribed in enumerate(member_topics):
            for topic in subscribed:
                self.subscribers[topic].append(member)
        self.own: list[dict[int, int]] = [{} for _ in member_topics]
        self.kept: list[dict[int, int]] = [{} for _ in member_topics]
        self.new: list[dict[int, int]] = [{} for _ in member_topics]
        self.loads = [len(numbers) for numbers in assigned]
        for member, numbers in enumerate(owned):
            own, consumed = self.own[member], set(member_topics[member])
            for number in numbers:
                topic = topic_at[number]
                if topic in consumed:
                    own[topic] = own.get(topic, 0) + 1
        for member, numbers in enumerate(assigned):
            mine = set(owned[member])
            kept, new = self.kept[member], self.new[member]
            for number in numbers:
                counts = kept if number in mine else new
                topic = topic_at[number]
                counts[topic] = counts.get(topic, 0) + 1

    def snapshot(self) -> tuple[list[dict[int, int]], list[dict[int, int]], list[int]]:
        return [dict(k) for k in self.kept], [dict(n) for n in self.new], list(self.loads)

    def copy(self) -> _Counts:
        """The same counts, to change independently (what is never changed is shared)."""
        twin = copy.copy(self)
        twin.restore(self.snapshot())
        return twin

    def restore(
        self, snapshot: tuple[list[dict[int, int]], list[dict[int, int]], list[int]]
    ) -> None:
        self.kept, self.new, self.loads = snapshot

    def kip54_balanced(self) -> bool:
        """No member holds a partition that a subscriber with two fewer could take."""
        for topic, members in enumerate(self.subscribers):
            if members:
                limit = min(self.loads[m] for m in members) + 1
                if any(self.loads[m] > limit for m in members if self.holds(m, topic)):
                    return False
        return True

    def holds(self, member: int, topic: int) -> bool:
        return self.kept[member].get(topic, 0) + self.new[member].get(topic, 0) > 0

    def keepable(self, member: int, topic: int) -> bool:
        """Whether `member` could take back one of its own partitions of `topic`."""
        return self.kept[member].get(topic, 0) < self.own[member].get(topic, 0)

    def give(self, member: int, topic: int) -> None:
        """`member` gives up a partition of `topic`, another's before one of its own."""
        counts = self.new[member] if self.new[member].get(topic, 0) else self.kept[member]
        counts[topic] -= 1
        self.loads[member] -= 1

    def take(self, member: int, topic: int) -> None:
        """`member` takes a partition of `topic`, one of its own if it can."""
        counts = self.kept[member] if self.keepable(member, topic) else self.new[member]
        counts[topic] = counts.get(topic, 0) + 1
        self.loads[member] += 1


def optimize(
    topic_ranges: Sequence[range],
    topic_at: Sequence[int],
    member_topics: Sequence[Sequence[int]],
    owned: Sequence[Sequence[int]],
    assigned: list[list[int]],
) -> list[list[int]]:
    """`assigned` (valid, complete), narrowed to the least spread and then made stickiest."""
    if not assigned:
        return assigned
    counts = _Counts(topic_at, member_topics, owned, assigned, len(topic_ranges))
    kip54 = counts.copy()
    changed = False
    while (chain := _narrowing_chain(counts)) is not None:
        for giver, taker, topic in chain:
            counts.give(giver, topic)
            counts.take(taker, topic)
        changed = True
    lost = any(
        counts.kept[m].get(t, 0) < n for m, own in enumerate(counts.own) for t, n in own.items()
    )
    while lost and (cycle := _negative_cycle(counts)) is not None:
        _push(counts, cycle)
        changed = True
    narrowest = _spread_and_kept(counts)[0]
    if lost and narrowest >= 2 and _spread_and_kept(kip54)[0] == narrowest:
        # KIP-54's answer is as narrow: its loads, kept as they are, may let members keep more.
        _keep_more_at_these_loads(kip54)
        if _spread_and_kept(kip54) < _spread_and_kept(counts):
            counts, changed = kip54, True
    if not changed:
        return assigned
    return _materialize(counts, topic_ranges, topic_at, owned, assigned)


def _spread_and_kept(counts: _Counts) -> tuple[int, int]:
    """(spread, -partitions kept): the lesser is the better assignment."""
    kept = sum(sum(k.values()) for k in counts.kept)
    return max(counts.loads) - min(counts.loads), -kept


_MAX_REJECTED = 32
"""Cycles tried and undone (they broke KIP-54's balance) before `_keep_more_at_these_loads`
stops looking."""


def _keep_more_at_these_loads(counts: _Counts) -> bool:
    """Cycles that keep every load and keep more, while the assignment stays KIP-54 balanced.

    A cycle that makes a member hold a topic that a subscriber with two fewer could take is
    undone and its arcs are not used again. True if anything changed.
    """
    banned: set[tuple[int, int]] = set()
    changed = False
    rejected = 0
    while rejected < _MAX_REJECTED:
        cycle = _negative_cycle(counts, fixed_loads=True, banned=banned)
        if cycle is None:
            break
        before = counts.snapshot()
        _push(counts, cycle)
        if counts.kip54_balanced():
            changed = True
            continue
        counts.restore(before)
        rejected += 1
        banned.update(cycle)
    return changed


def _narrowing_chain(counts: _Counts) -> list[tuple[int, int, int]] | None:
    """Moves (giver, taker, topic) from a member to one with two or more fewer, if any."""
    loads = counts.loads
    lowest = min(loads)
    for level in sorted(set(loads), reverse=True):
        if level < lowest + 2:
            return None
        parent: dict[int, tuple[int, int] | None] = {
            m: None for m, n in enumerate(loads) if n == level
        }
        queue = deque(parent)
        expanded: set[int] = set()
        while queue:
            giver = queue.popleft()
            for topic in counts.member_topics[giver]:
                if topic in expanded or not counts.holds(giver, topic):
                    continue
                expanded.add(topic)
                for taker in counts.subscribers[topic]:
                    if taker in parent:
                        continue
                    parent[taker] = (giver, topic)
                    if loads[taker] <= level - 2:
                        return _walk_back(parent, taker)
                    queue.append(taker)
    return None


def _walk_back(parent: dict[int, tuple[int, int] | None], end: int) -> list[tuple[int, int, int]]:
    chain: list[tuple[int, int, int]] = []
    node = end
    while (step := parent[node]) is not None:
        chain.append((step[0], node, step[1]))
        node = step[0]
    return chain[::-1]


_SINK = -1


def _negative_cycle(
    counts: _Counts,
    *,
    fixed_loads: bool = False,
    banned: set[tuple[int, int]] | frozenset[tuple[int, int]] = frozenset(),
) -> list[tuple[int, int]] | None:
    """A cycle of negative cost in the residual flow graph, as (node, node) arcs, if any.

    Nodes: members, then topics, then the sink. Arcs: topic -> subscriber (-1 if it takes back
    its own partition, else 0); member -> topic it holds (0 if it gives up another's partition,
    +1 if its own); member -> sink and sink -> member (one more or one fewer partition), costed
    by the change in the sum of squared loads times a weight no stickiness gain outweighs. The
    loads already minimise that sum (step 1), so a negative cycle keeps it and keeps more.
    """
    members = len(counts.loads)
    topics = len(counts.subscribers)
    sink = members + topics
    weight = sum(counts.loads) + 1
    arcs: list[tuple[int, int, int]] = []
    for member, subscribed in enumerate(counts.member_topics):
        for topic in subscribed:
            arcs.append((members + topic, member, -1 if counts.keepable(member, topic) else 0))
            if counts.new[member].get(topic, 0):
                arcs.append((member, members + topic, 0))
            elif counts.kept[member].get(topic, 0):
                arcs.append((member, members + topic, 1))
        load = counts.loads[member]
        if not fixed_loads:
            arcs.append((member, sink, weight * (2 * load + 1)))
            if load:
                arcs.append((sink, member, -weight * (2 * load - 1)))
    if banned:
        arcs = [arc for arc in arcs if arc[:2] not in banned]
    nodes = sink + 1
    distance = [0] * nodes
    via = [-1] * nodes
    for _ in range(nodes):
        relaxed = False
        for index, (a, b, cost) in enumerate(arcs):
            if distance[a] + cost < distance[b]:
                distance[b] = distance[a] + cost
                via[b] = index
                relaxed = True
        if not relaxed:
            return None
        # A cycle among the predecessors is a negative one: look after every round, as one
        # usually shows long before Bellman-Ford's last round would prove it.
        cycle = _predecessor_cycle(arcs, via)
        if cycle is not None:
            return cycle
    return None


def _predecessor_cycle(
    arcs: list[tuple[int, int, int]], via: list[int]
) -> list[tuple[int, int]] | None:
    """A cycle in the graph of each node's last relaxing arc, as arcs, if there is one."""
    state = [0] * len(via)  # 0: not seen, 1: on the current walk, 2: no cycle through it
    for start in range(len(via)):
        walk: list[int] = []
        node = start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = arcs[via[node]][0] if via[node] >= 0 else -1
        if node >= 0 and state[node] == 1:
            loop = walk[walk.index(node) :]
            return [(arcs[via[n]][0], n) for n in loop]
        for seen in walk:
            state[seen] = 2
    return None


def _push(counts: _Counts, cycle: list[tuple[int, int]]) -> None:
    """Move one unit around `cycle`."""
    members = len(counts.loads)
    sink = members + len(counts.subscribers)
    for a, b in cycle:
        if sink in (a, b):
            continue
        if a >= members:  # topic -> member: the member takes a partition
            counts.take(b, a - members)
        else:  # member -> topic: the member gives one up
            counts.give(a, b - members)


def _materialize(
    counts: _Counts,
    topic_ranges: Sequence[range],
    topic_at: Sequence[int],
    owned: Sequence[Sequence[int]],
    assigned: Sequence[Sequence[int]],
) -> list[list[int]]:
    """Partitions for the counts: own ones first those already held, others where they are."""
    result: list[list[int]] = [[] for _ in assigned]
    kept_by_anyone: set[int] = set()
    for member, numbers in enumerate(owned):
        held = set(assigned[member])
        left = dict(counts.kept[member])
        for number in sorted(numbers, key=lambda n: (n not in held, n)):
            topic = topic_at[number]
            if left.get(topic, 0) > 0:
                left[topic] -= 1
                result[member].append(number)
                kept_by_anyone.add(number)
    wanted = [dict(new) for new in counts.new]
    placed: set[int] = set()
    for member, numbers in enumerate(assigned):
        for number in numbers:
            topic = topic_at[number]
            if number not in kept_by_anyone and wanted[member].get(topic, 0) > 0:
                wanted[member][topic] -= 1
                result[member].append(number)
                placed.add(number)
    for topic, numbers in enumerate(topic_ranges):
        pool = (n for n in numbers if n not in kept_by_anyone and n not in placed)
        for member in counts.subscribers[topic]:
            for _ in range(wanted[member].get(topic, 0)):
                result[member].append(next(pool))
    return [sorted(numbers) for numbers in result]
