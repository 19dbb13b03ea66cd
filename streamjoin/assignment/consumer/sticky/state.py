"""The working state of the general sticky path: who holds what, indexed by load.

Partition numbers are grouped per member and topic into those the member owned before this
rebalance ("kept") and those handed to it in this rebalance ("new"): moving a new one costs no
stickiness. Per topic, lazy heaps find the least-loaded subscriber and the most-loaded holder in
logarithmic time; an entry is trusted only while it matches the member's current load (and, for
holders, while the member still holds the topic), so updates are just pushes (`reindex`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

__all__ = ("BalanceState", "Holding")

Holding = tuple[list[int], list[int]]
"""One member's partitions of one topic: (kept, new)."""


class BalanceState:
    """Members' loads and holdings (`held[member][topic]`), kept current by `shift`."""

    def __init__(
        self,
        member_topics: Sequence[Sequence[int]],
        subscribers: Sequence[Sequence[int]],
        held: list[dict[int, Holding]],
        loads: list[int],
    ) -> None:
        self.member_topics = member_topics
        self.subscribers = subscribers
        self.held = held
        self.loads = loads
        self.new_holders: list[set[int]] = [set() for _ in subscribers]
        """Per topic, the members holding at least one new partition of it."""
        self._light = [[(loads[m], m) for m in members] for members in subscribers]
        self._heavy: list[list[tuple[int, int]]] = [[] for _ in subscribers]
        for member, holdings in enumerate(held):
            for topic, (_, new) in holdings.items():
                self._heavy[topic].append((-loads[member], member))
                if new:
                    self.new_holders[topic].add(member)
        for heap in (*self._light, *self._heavy):
            heapq.heapify(heap)

    def least_loaded(self, topic: int) -> int:
        """The least-loaded subscriber of `topic` (lowest index among equals)."""
        heap = self._light[topic]
        while heap[0][0] != self.loads[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1]

    def most_loaded_holder(self, topic: int) -> int | None:
        """The most-loaded member holding a partition of `topic`, if any."""
        heap = self._heavy[topic]
        while heap and (
            -heap[0][0] != self.loads[heap[0][1]] or topic not in self.held[heap[0][1]]
        ):
            heapq.heappop(heap)
        return heap[0][1] if heap else None

    def overloaded(self, member: int) -> bool:
        """Whether `member` holds a partition some subscriber with 2+ fewer could take."""
        limit = self.loads[member] - 2
        return any(self.loads[self.least_loaded(t)] <= limit for t in self.held[member])

    def underloaded(self, member: int) -> bool:
        """Whether some member with 2+ more holds a partition `member` could take."""
        limit = self.loads[member] + 2
        for topic in self.member_topics[member]:
            holder = self.most_loaded_holder(topic)
            if holder is not None and self.loads[holder] >= limit:
                return True
        return False

    def shift(self, giver: int, taker: int, topic: int, *, new_only: bool = False) -> None:
        """Move one of `giver`'s partitions of `topic` to `taker`, a new one if it has one.

        Call `reindex` on both members before the next query.
        """
        holdings = self.held[giver]
        kept, new = holdings[topic]
        if new_only and not new:
            raise ValueError(f"member {giver} holds no new partition of topic {topic}")
        number = new.pop() if new else kept.pop()
        if not new:
            self.new_holders[topic].discard(giver)
        if not kept and not new:
            del holdings[topic]
        self.held[taker].setdefault(topic, ([], []))[1].append(number)
        self.new_holders[topic].add(taker)
        self.loads[giver] -= 1
        self.loads[taker] += 1

    def reindex(self, members: Iterable[int]) -> None:
        """Record the current loads and holdings of `members` in the heaps."""
        for member in members:
            load = self.loads[member]
            for topic in self.member_topics[member]:
                heapq.heappush(self._light[topic], (load, member))
            for topic in self.held[member]:
                heapq.heappush(self._heavy[topic], (-load, member))
