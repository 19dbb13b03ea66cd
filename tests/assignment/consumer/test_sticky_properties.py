"""Properties of `sticky` over random groups (both the quota and the general path)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping

from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from hypothesis import assume, given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.consumer.sticky.user_data import encode_sticky_user_data
from streamjoin.assignment.model import Assignment, GroupAssignment, Subscription, TopicPartition
from tests.assignment.consumer.flow_bounds import best

Topics = dict[str, int]
Subscribed = dict[str, tuple[str, ...]]


@st.composite
def groups(draw: st.DrawFn, identical: bool | None = None) -> tuple[Topics, Subscribed]:
    topics = {f"t{i}": draw(st.integers(0, 9)) for i in range(draw(st.integers(1, 4)))}
    names = [f"m{i}" for i in range(draw(st.integers(1, 6)))]
    same = draw(st.booleans()) if identical is None else identical
    if same:
        return topics, dict.fromkeys(names, tuple(topics))
    subsets = st.lists(st.sampled_from(sorted(topics)), min_size=1, max_size=4, unique=True)
    return topics, {m: tuple(draw(subsets)) for m in names}


claims = st.lists(
    st.tuples(st.sampled_from(["t0", "t1", "t2", "t3", "gone"]), st.integers(-1, 10)), max_size=12
)


def run(
    topics: Topics, subscribed: Subscribed, owned: Mapping[str, tuple] = {}, generation: int = 1
):
    subscriptions = {
        m: Subscription(t, owned_partitions=tuple(owned.get(m, ())), generation=generation)
        for m, t in subscribed.items()
    }
    return StickyAssignor().assign(topics, subscriptions)


def eligible(topics: Topics, subscribed: Subscribed) -> dict[str, set[str]]:
    return {m: {t for t in ts if topics.get(t, 0) > 0} for m, ts in subscribed.items()}


def assert_valid(result: GroupAssignment, topics: Topics, subscribed: Subscribed) -> None:
    assert set(result) == set(subscribed)
    seen: set[TopicPartition] = set()
    for member, given_ in result.items():
        for tp in given_.partitions:
            assert tp not in seen, f"{tp} assigned twice"
            assert tp.topic in subscribed[member]
            assert 0 <= tp.partition < topics[tp.topic]
            seen.add(tp)
    wanted = {
        TopicPartition(t, p) for ts in subscribed.values() for t in ts for p in range(topics[t])
    }
    assert seen == wanted


def balanced(result: GroupAssignment, can: Mapping[str, set[str]]) -> bool:
    """KIP-54's definition, checked pair by pair."""
    loads = {m: len(a.partitions) for m, a in result.items()}
    return all(
        tp.topic not in can[a]
        for a, b in itertools.permutations(result, 2)
        if loads[a] <= loads[b] - 2
        for tp in result[b].partitions
    )


def as_owned(result: GroupAssignment) -> dict[str, tuple[TopicPartition, ...]]:
    return {m: a.partitions for m, a in result.items()}


@given(
    groups(),
    st.dictionaries(st.sampled_from([f"m{i}" for i in range(6)]), claims),
    st.integers(-1, 3),
)
def test_valid_and_balanced_whatever_was_owned(group, owned, generation) -> None:
    topics, subscribed = group
    result = run(
        topics,
        subscribed,
        {m: [TopicPartition(*c) for c in cs] for m, cs in owned.items()},
        generation,
    )
    assert_valid(result, topics, subscribed)
    assert balanced(result, eligible(topics, subscribed))


@given(groups(), st.randoms(use_true_random=False))
def test_same_result_whatever_the_input_order(group, rnd: random.Random) -> None:
    topics, subscribed = group
    previous = run(topics, {m: ts for m, ts in subscribed.items() if m != "m0"})
    owned = as_owned(previous)
    expected = run(topics, subscribed, owned)

    def shuffled(items):
        items = list(items)
        rnd.shuffle(items)
        return items

    topics2 = dict(shuffled(topics.items()))
    subscribed2 = {m: tuple(shuffled(ts)) for m, ts in shuffled(subscribed.items())}
    owned2 = {m: tuple(shuffled(tps)) for m, tps in shuffled(owned.items())}
    again = run(topics2, subscribed2, owned2)
    assert {m: a.partitions for m, a in again.items()} == {
        m: a.partitions for m, a in expected.items()
    }


@given(groups(), st.dictionaries(st.sampled_from([f"m{i}" for i in range(6)]), claims))
def test_an_unchanged_group_gets_its_assignment_back(group, owned) -> None:
    topics, subscribed = group
    first = run(
        topics, subscribed, {m: [TopicPartition(*c) for c in cs] for m, cs in owned.items()}
    )
    second = run(topics, subscribed, as_owned(first), generation=2)
    assert as_owned(second) == as_owned(first)


def kept(before: Mapping[str, tuple], after: GroupAssignment) -> int:
    return sum(len(set(before[m]) & set(after[m].partitions)) for m in after if m in before)


@given(groups(identical=True), st.data())
def test_identical_subscriptions_keep_as_much_as_balance_allows(group, data) -> None:
    """Members leave, join, and topics grow; the result keeps the most that balance allows."""
    topics, subscribed = group
    members = sorted(subscribed)
    survivors = data.draw(st.lists(st.sampled_from(members), min_size=1, unique=True))
    joiners = {f"new{i}": tuple(topics) for i in range(data.draw(st.integers(0, 2)))}
    grown = {t: n + data.draw(st.integers(0, 3)) for t, n in topics.items()}
    before = as_owned(run(topics, subscribed))
    group2 = {**{m: subscribed[m] for m in survivors}, **joiners}
    after = run(grown, group2, before)
    assert_valid(after, grown, group2)
    quota, extra = divmod(sum(grown.values()), len(group2))
    owned = [len(before[m]) for m in survivors]
    best = sum(min(c, quota) for c in owned) + min(extra, sum(1 for c in owned if c > quota))
    assert kept(before, after) == best
    # Partitions never move from one survivor to another: only to joiners, or unowned ones.
    for member in survivors:
        for tp in after[member].partitions:
            assert not any(tp in before[other] for other in survivors if other != member)
    if not joiners:  # members only left: the survivors keep everything they had
        assert all(set(before[m]) <= set(after[m].partitions) for m in survivors)


def balanced_completion_exists(topics, subscribed, before, leaver) -> bool:
    """Whether the leaver's partitions can go to the others so that nothing else moves and the
    result is as balanced as any assignment (the least sum of squared loads; brute force)."""
    rest = {m: ts for m, ts in subscribed.items() if m != leaver}
    orphans = [tp for tp in before[leaver] if any(tp.topic in ts for ts in rest.values())]
    options = [[m for m, ts in rest.items() if tp.topic in ts] for tp in orphans]
    consuming = {m: ts for m, ts in rest.items() if any(topics[t] for t in ts)}
    least = best(topics, consuming, {}).squares if consuming else 0
    for choice in itertools.product(*options):
        loads = Counter({m: len(before[m]) for m in rest})
        loads.update(choice)
        if sum(n * n for n in loads.values()) == least:
            return True
    return False


@given(groups(identical=False), st.data())
def test_a_leaving_member_moves_only_its_partitions_when_balance_allows(group, data) -> None:
    topics, subscribed = group
    assume(len(subscribed) >= 2)
    before = as_owned(run(topics, subscribed))
    leaver = data.draw(st.sampled_from(sorted(subscribed)))
    assume(len(before[leaver]) <= 6)
    rest = {m: ts for m, ts in subscribed.items() if m != leaver}
    after = run(topics, rest, before)
    if balanced_completion_exists(topics, subscribed, before, leaver):
        assert all(set(before[m]) <= set(after[m].partitions) for m in rest)


class _Cluster:
    def __init__(self, topics: Topics) -> None:
        self._topics = topics

    def topics(self) -> set[str]:
        return set(self._topics)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self._topics[topic])) if self._topics.get(topic) else None


@given(groups(identical=True), st.data())
def test_keeps_at_least_as_much_as_aiokafkas_sticky_assignor(group, data) -> None:
    """On the same churn, with the same user data bytes, and as balanced."""
    topics, subscribed = group
    survivors = data.draw(st.lists(st.sampled_from(sorted(subscribed)), min_size=1, unique=True))
    now = {**{m: subscribed[m] for m in survivors}, "joiner": tuple(topics)}
    before = as_owned(run(topics, subscribed))
    user_data = {m: encode_sticky_user_data(before[m], 1) for m in survivors}
    ours = StickyAssignor().assign(
        topics, {m: Subscription(t, user_data.get(m, b"")) for m, t in now.items()}
    )
    theirs = StickyPartitionAssignor.assign(
        _Cluster(topics),
        {
            m: ConsumerProtocolMemberMetadata(0, list(t), user_data.get(m, b""))
            for m, t in now.items()
        },
    )
    theirs_owned = {
        m: tuple(TopicPartition(t, p) for t, ps in a.assignment for p in ps)
        for m, a in theirs.items()
    }
    assert kept(before, ours) >= kept(before, {m: Assignment(p) for m, p in theirs_owned.items()})
    sizes = [len(a.partitions) for a in ours.values()]
    assert max(sizes) - min(sizes) <= 1
