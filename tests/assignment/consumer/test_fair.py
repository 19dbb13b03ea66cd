from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.fair import FairAssignor
from streamjoin.assignment.model import Subscription, TopicPartition


def test_seed_002_fair_table_gives_every_member_two_partitions() -> None:
    topics = {"T1": 2, "T2": 1, "T3": 2, "T4": 1, "T5": 2}
    every, some = ("T1", "T2", "T3", "T4", "T5"), ("T1", "T3", "T5")
    members = {"C1": every, "C2": some, "C3": some, "C4": every}
    result = FairAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    assert {m: [f"{t}-{p}" for t, p in a.partitions] for m, a in result.items()} == {
        "C1": ["T2-0", "T3-0"],
        "C2": ["T1-0", "T3-1"],
        "C3": ["T1-1", "T5-0"],
        "C4": ["T4-0", "T5-1"],
    }


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 6), min_size=1),
    st.lists(st.sets(st.sampled_from(["a", "b", "c", "d"]), min_size=1), min_size=1, max_size=5),
)
def test_each_partition_goes_to_the_least_loaded_eligible_member(topics, subscriptions) -> None:
    members = {f"m{i}": tuple(sorted(s)) for i, s in enumerate(subscriptions)}
    result = FairAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    # The KIP's rule, one partition at a time.
    loads = dict.fromkeys(members, 0)
    expected: dict[str, list[TopicPartition]] = {m: [] for m in members}
    subscribers = {t: [m for m in sorted(members) if t in members[m]] for t in topics}
    order = sorted(
        (t for t in topics if subscribers[t] and topics[t]),
        key=lambda t: (len(subscribers[t]), -topics[t], t),
    )
    for t in order:
        for p in range(topics[t]):
            m = min(subscribers[t], key=lambda x: (loads[x], x))
            expected[m].append(TopicPartition(t, p))
            loads[m] += 1
    assert {m: a.partitions for m, a in result.items()} == {
        m: tuple(sorted(v)) for m, v in expected.items()
    }
