"""Exact bounds for consumer assignments of small groups, by min-cost flow (test helper).

The most balanced assignment of partitions to the members that may consume them minimises the
sum of squared loads (and so has the least maximum and the greatest minimum load at once); among
those, the stickiest keeps as many previously owned partitions as a min-cost flow allows. The
flow runs on topics, not partitions: source -> topic (its partition count) -> member (kept: up to
what the member owned of it, cost -1; new: any, cost 0) -> sink (one arc per unit of load,
costing its share of the sum of squares, weighted above any number of partitions kept).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple


class Best(NamedTuple):
    spread: int
    squares: int
    kept: int


class _Flow:
    def __init__(self, nodes: int) -> None:
        self.edges: list[list[int]] = []  # [to, capacity, cost]
        self.out: list[list[int]] = [[] for _ in range(nodes)]

    def edge(self, a: int, b: int, capacity: int, cost: int) -> None:
        self.out[a].append(len(self.edges))
        self.edges.append([b, capacity, cost])
        self.out[b].append(len(self.edges))
        self.edges.append([a, 0, -cost])

    def min_cost_max_flow(self, source: int, sink: int) -> tuple[int, int]:
        flow = cost = 0
        while True:
            distance: list[float] = [float("inf")] * len(self.out)
            via: list[int] = [-1] * len(self.out)
            distance[source] = 0
            for _ in range(len(self.out)):  # Bellman-Ford: costs may be negative
                changed = False
                for node, edges in enumerate(self.out):
                    if distance[node] == float("inf"):
                        continue
                    for e in edges:
                        to, capacity, c = self.edges[e]
                        if capacity > 0 and distance[node] + c < distance[to]:
                            distance[to] = distance[node] + c
                            via[to] = e
                            changed = True
                if not changed:
                    break
            if distance[sink] == float("inf"):
                return flow, cost
            push, node = 1 << 30, sink
            while node != source:
                e = via[node]
                push = min(push, self.edges[e][1])
                node = self.edges[e ^ 1][0]
            node = sink
            while node != source:
                e = via[node]
                self.edges[e][1] -= push
                self.edges[e ^ 1][1] += push
                node = self.edges[e ^ 1][0]
            flow += push
            cost += push * int(distance[sink])


def best(
    counts: Mapping[str, int],
    subscribed: Mapping[str, Sequence[str]],
    owned: Mapping[str, Mapping[str, int]],
) -> Best:
    """The most balanced assignment that keeps the most: its spread, sum of squares, kept.

    Most balanced: the least sum of squared loads (every such assignment has the same loads up
    to order: the least maximum, the greatest minimum). Then the most owned partitions kept.
    """
    wanted = {t for topics in subscribed.values() for t in topics}
    topics = sorted(t for t, n in counts.items() if n > 0 and t in wanted)
    members = sorted(subscribed)
    total = sum(counts[t] for t in topics)
    weight = total + 1
    source, sink = 0, 1
    topic_node = {t: 2 + i for i, t in enumerate(topics)}
    member_node = {m: 2 + len(topics) + i for i, m in enumerate(members)}
    graph = _Flow(2 + len(topics) + len(members))
    for t in topics:
        graph.edge(source, topic_node[t], counts[t], 0)
    for m in members:
        for t in set(subscribed[m]):
            if t in topic_node:
                keep = min(owned.get(m, {}).get(t, 0), counts[t])
                if keep:
                    graph.edge(topic_node[t], member_node[m], keep, -1)
                graph.edge(topic_node[t], member_node[m], counts[t], 0)
        for load in range(total):  # the load-th unit adds 2 * load + 1 to the sum of squares
            graph.edge(member_node[m], sink, 1, weight * (2 * load + 1))
    flow, cost = graph.min_cost_max_flow(source, sink)
    assert flow == total
    loads = [
        sum(1 - graph.edges[e][1] for e in graph.out[member_node[m]] if graph.edges[e][0] == sink)
        for m in members
    ]
    squares = sum(load * load for load in loads)
    return Best(max(loads) - min(loads), squares, squares * weight - cost)
