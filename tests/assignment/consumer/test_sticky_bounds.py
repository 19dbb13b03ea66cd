"""`sticky` and `cooperative-sticky` against exact bounds, over groups that change.

Balance: the spread (most minus fewest partitions per member) is the least any assignment of
the group reaches, mixed subscriptions included (among members that have something to consume).
Stickiness: no assignment as balanced (the least sum of squared loads, which also rules out any
single move KIP-54 would make) keeps more previously owned partitions. Both bounds come from a
min-cost flow (`flow_bounds`), checked at every step of random joins, leaves and subscription
changes.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.assignment.consumer.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.model import GroupAssignment, Subscription, TopicPartition
from tests.assignment.consumer.flow_bounds import best

Owned = dict[str, tuple[TopicPartition, ...]]


def assign(
    name: str, counts: Mapping[str, int], subscribed: Mapping[str, tuple[str, ...]], owned: Owned
) -> GroupAssignment:
    subscriptions = {
        m: Subscription(topics, owned_partitions=owned.get(m, ()), generation=1)
        for m, topics in subscribed.items()
    }
    if name == "sticky":
        return StickyAssignor().assign(counts, subscriptions)
    return CooperativeStickyAssignor().assign_step(counts, subscriptions).target()


def check_step(
    name: str, counts: Mapping[str, int], subscribed: Mapping[str, tuple[str, ...]], owned: Owned
) -> GroupAssignment:
    result = assign(name, counts, subscribed, owned)
    # Members with nothing to consume get nothing and take no part in the balance.
    consuming = {m: ts for m, ts in subscribed.items() if any(counts[t] for t in ts)}
    assert all(not result[m].partitions for m in subscribed if m not in consuming)
    if not consuming:
        return result
    loads = [len(result[m].partitions) for m in consuming]
    per_topic = {m: Counter(tp.topic for tp in tps) for m, tps in owned.items()}
    spread, _, most = best(counts, consuming, per_topic)
    assert max(loads) - min(loads) <= spread, (name, sorted(loads), spread)
    kept = sum(1 for m, a in result.items() for tp in a.partitions if tp in set(owned.get(m, ())))
    assert kept >= most, (name, kept, most)
    return result


topic_names = ("t0", "t1", "t2", "t3")


@st.composite
def changing_groups(draw: st.DrawFn) -> tuple[dict[str, int], list[dict[str, tuple[str, ...]]]]:
    """Partition counts and a sequence of memberships (each a member -> topics mapping)."""
    counts = {t: draw(st.integers(0, 9)) for t in topic_names[: draw(st.integers(1, 4))]}
    identical = draw(st.booleans())
    subsets = st.lists(st.sampled_from(sorted(counts)), min_size=1, unique=True).map(tuple)
    next_id = 0
    members: dict[str, tuple[str, ...]] = {}
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        if members and draw(st.booleans()):
            for gone in draw(st.lists(st.sampled_from(sorted(members)), max_size=2, unique=True)):
                del members[gone]
        for _ in range(draw(st.integers(0 if members else 1, 3))):
            members[f"m{next_id}"] = tuple(sorted(counts)) if identical else draw(subsets)
            next_id += 1
        if not identical and members and draw(st.booleans()):
            changed = draw(st.sampled_from(sorted(members)))
            members[changed] = draw(subsets)
        if members:
            steps.append(dict(members))
    return counts, steps


@settings(max_examples=int(os.environ.get("STREAMJOIN_BOUND_EXAMPLES", "150")), deadline=None)
@given(changing_groups(), st.sampled_from(["sticky", "cooperative-sticky"]))
def test_as_balanced_as_possible_and_then_as_sticky_at_every_step(group, name) -> None:
    counts, steps = group
    owned: Owned = {}
    for subscribed in steps:
        result = check_step(name, counts, subscribed, owned)
        owned = {m: a.partitions for m, a in result.items()}
