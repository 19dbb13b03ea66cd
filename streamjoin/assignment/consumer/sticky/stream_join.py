"""`stream-join-sticky` (docs/rebalancing.md): co-partitioned and sticky, for stream-stream joins.

A join needs partition n of every joined topic on the same member, so this assignor assigns
partition *numbers*: one owner per number, across all subscribed topics.

1. Numbers 0..P-1 are assignable, P being the smallest partition count of the subscribed topics
   (the extra partitions of a topic that grew first wait until the others catch up).
2. Previous ownership comes from each member's subscription user data (numbers and epoch); the
   higher epoch wins a number claimed twice, and a tie leaves it unowned.
3. Members pick numbers in rounds, those with the longest previous lists first: a previously
   owned number if one is left, else an unowned one, else one stolen from the member with the
   most left to lose (the longest previous list breaks ties). Rounds keep counts within one of
   each other; a member keeps at most its share, and the extra slots go to members that owned
   more than the even share first.
4. A member receives its numbers for each topic it subscribes to, and nothing else.
5. The assignment user data carries the next epoch: the highest reported epoch plus one.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Mapping, Sequence
from itertools import compress

from streamjoin.assignment.consumer.claims import resolve_claims
from streamjoin.assignment.consumer.collector import without_collector
from streamjoin.assignment.consumer.sticky.stream_join_user_data import (
    StreamJoinSubscriptionData,
    decode_stream_join_assignment,
    decode_stream_join_subscription,
    encode_stream_join_assignment,
    encode_stream_join_subscription,
)
from streamjoin.assignment.consumer.topic_layout import topic_partitions
from streamjoin.assignment.consumer.waterfill import deal
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
    sorted_partitions,
)
from streamjoin.errors import ProtocolDecodeError

__all__ = ("StreamJoinStickyAssignor", "select_numbers")

logger = logging.getLogger(__name__)


def select_numbers(count: int, owned: Sequence[Sequence[int]]) -> list[list[int]]:
    """Numbers 0..count-1 for members, given each one's previously owned numbers.

    `owned[i]` must be ascending, below `count` and disjoint from the others'; ties between
    members go to the lower index. Returns each member's numbers, ascending.
    """
    members = len(owned)
    if not members:
        return []
    # Round order: longest previous list first, then index.
    rounds = sorted(range(members), key=lambda m: (-len(owned[m]), m))
    quota, extra = divmod(count, members)
    caps = dict.fromkeys(range(members), quota)
    for m in rounds:
        if extra and len(owned[m]) > quota:
            caps[m] += 1
            extra -= 1
    for m in rounds:
        if extra and caps[m] == quota:
            caps[m] += 1
            extra -= 1
    kept = [list(owned[m][: caps[m]]) for m in range(members)]
    taken = bytearray(count)
    for numbers in owned:
        for number in numbers:
            taken[number] = 1
    pool = list(compress(range(count), (not flag for flag in taken)))
    pool.extend(_stolen(owned, caps))
    deal(
        pool,
        [len(kept[m]) for m in rounds],
        [caps[m] for m in rounds],
        [kept[m] for m in rounds],
    )
    return [sorted(numbers) for numbers in kept]


def _stolen(owned: Sequence[Sequence[int]], caps: Mapping[int, int]) -> list[int]:
    """Previously owned numbers beyond their owner's share, in the order they are stolen:
    always from the member with the most left to lose, its highest number first."""
    excess = {m: list(owned[m][caps[m] :]) for m in range(len(owned)) if len(owned[m]) > caps[m]}
    heap = [(-len(numbers), -len(owned[m]), m) for m, numbers in excess.items()]
    heapq.heapify(heap)
    stolen: list[int] = []
    while heap:
        left, longest, m = heapq.heappop(heap)
        stolen.append(excess[m].pop())
        if left + 1:
            heapq.heappush(heap, (left + 1, longest, m))
    return stolen


def _subscription_data(subscription: Subscription) -> StreamJoinSubscriptionData:
    if not subscription.user_data:
        return StreamJoinSubscriptionData()
    try:
        return decode_stream_join_subscription(subscription.user_data)
    except ProtocolDecodeError as exc:
        logger.warning("ignoring a member's previous assignment: %s", exc)
        return StreamJoinSubscriptionData()


class StreamJoinStickyAssignor(PartitionAssignor):
    """The sticky stream-join assignor (docs/rebalancing.md), protocol `stream-join-sticky`."""

    name = "stream-join-sticky"
    # Under COOPERATIVE the group leader withholds a number another member still owns until
    # that member has revoked it (assignment/cooperative.py), so tasks move without a pause
    # anywhere else.
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(self) -> None:
        self._owned_numbers: tuple[int, ...] | None = None
        self._epoch = NO_GENERATION

    @without_collector
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        members = sorted(subscriptions)
        topics = {
            m: sorted({t for t in subscriptions[m].topics if partitions_per_topic.get(t, 0) > 0})
            for m in members
        }
        counts = [partitions_per_topic[t] for m in members for t in topics[m]]
        count = min(counts, default=0)
        data = {m: _subscription_data(subscriptions[m]) for m in members}
        consuming = [m for m in members if topics[m]]
        owned = resolve_claims(
            [
                ([n for n in data[m].owned_numbers if 0 <= n < count], data[m].epoch)
                for m in consuming
            ]
        )
        numbers = dict(zip(consuming, select_numbers(count, owned), strict=True))
        user_data = encode_stream_join_assignment(
            max((d.epoch for d in data.values()), default=NO_GENERATION) + 1
        )
        assignment: GroupAssignment = {}
        for m in members:
            mine = numbers.get(m, [])
            partitions = [
                tp for t in topics[m] for tp in map(topic_partitions(t, count).__getitem__, mine)
            ]
            assignment[m] = Assignment(sorted_partitions(partitions), user_data)
        return assignment

    def subscription_user_data(self, topics: Sequence[str]) -> bytes:
        if self._owned_numbers is None:
            return b""
        return encode_stream_join_subscription(self._owned_numbers, self._epoch)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """Remember the numbers and the epoch (the group generation is not used)."""
        self._owned_numbers = tuple(sorted({tp.partition for tp in assignment.partitions}))
        try:
            self._epoch = decode_stream_join_assignment(assignment.user_data)
        except ProtocolDecodeError as exc:
            logger.warning("assignment without a stream-join epoch: %s", exc)
            self._epoch = NO_GENERATION
