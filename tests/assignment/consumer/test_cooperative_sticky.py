from __future__ import annotations

import itertools
import random

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.cooperative import cooperative_step
from streamjoin.assignment.consumer.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)


def owned_subscriptions(topics, members, owned, generation):
    return {
        m: Subscription(
            tuple(topics), owned_partitions=tuple(owned.get(m, ())), generation=generation
        )
        for m in members
    }


def test_a_joining_member_gets_moved_partitions_only_after_the_follow_up() -> None:
    topics = {"t0": 2, "t1": 2}
    first = CooperativeStickyAssignor().assign(
        topics, owned_subscriptions(topics, ["C0", "C1"], {}, NO_GENERATION)
    )
    owned = {m: a.partitions for m, a in first.items()}
    step = CooperativeStickyAssignor().assign_step(
        topics, owned_subscriptions(topics, ["C0", "C1", "C2"], owned, 1)
    )
    # KIP-54's example 3 under the cooperative rule: C1 gives t1-1 to C2, in two rebalances.
    assert step.assignment["C2"].partitions == ()
    assert step.revoked == {"C1": (TopicPartition("t1", 1),)}
    assert step.pending == {"C2": (TopicPartition("t1", 1),)}
    owned = {m: a.partitions for m, a in step.assignment.items()}
    follow_up = CooperativeStickyAssignor().assign_step(
        topics, owned_subscriptions(topics, ["C0", "C1", "C2"], owned, 2)
    )
    assert not follow_up.needs_follow_up
    assert follow_up.assignment["C2"].partitions == (TopicPartition("t1", 1),)


def test_generation_comes_from_user_data_for_v1_subscriptions() -> None:
    member = CooperativeStickyAssignor()
    assert member.subscription_user_data(["t0"]) == b""
    member.on_assignment(Assignment(()), generation=6)
    user_data = member.subscription_user_data(["t0"])
    assert user_data == (6).to_bytes(4, "big")
    # C0 (generation 6, v1: no generation field) beats C1's stale claim from generation 5.
    subscriptions = {
        "C0": Subscription(("t0",), user_data, (TopicPartition("t0", 0),)),
        "C1": Subscription(("t0",), b"", (TopicPartition("t0", 0),), 5),
    }
    result = CooperativeStickyAssignor().assign({"t0": 2}, subscriptions)
    assert result["C0"].partitions == (TopicPartition("t0", 0),)


def test_supports_both_rebalance_protocols() -> None:
    assert set(CooperativeStickyAssignor.supported_protocols) == set(RebalanceProtocol)


@st.composite
def churn(draw: st.DrawFn):
    topics = {f"t{i}": draw(st.integers(1, 8)) for i in range(draw(st.integers(1, 3)))}
    names = [f"m{i}" for i in range(draw(st.integers(1, 5)))]
    identical = draw(st.booleans())
    subsets = st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True)
    subscribed = {m: tuple(topics) if identical else tuple(draw(subsets)) for m in names}
    survivors = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    joiners = {f"j{i}": tuple(topics) for i in range(draw(st.integers(0, 2)))}
    return topics, subscribed, {**{m: subscribed[m] for m in survivors}, **joiners}


def subs(subscribed, owned, generation):
    return {
        m: Subscription(ts, owned_partitions=tuple(owned.get(m, ())), generation=generation)
        for m, ts in subscribed.items()
    }


@given(churn(), st.randoms(use_true_random=False))
def test_two_rebalances_reach_a_sticky_balanced_assignment(case, rnd: random.Random) -> None:
    topics, before, after = case
    owned = {
        m: a.partitions for m, a in StickyAssignor().assign(topics, subs(before, {}, 1)).items()
    }
    step = CooperativeStickyAssignor().assign_step(topics, subs(after, owned, 2))
    # The target is exactly what sticky would do; nothing is handed out while still owned.
    assert step.target() == StickyAssignor().assign(topics, subs(after, owned, 2))
    for member, given_ in step.assignment.items():
        for tp in set(given_.partitions) - set(owned.get(member, ())):
            assert all(tp not in owned.get(o, ()) for o in after if o != member)
    # Members revoke; the follow-up hands over the rest and revokes nothing more.
    now = {m: a.partitions for m, a in step.assignment.items()}
    shuffled = dict(rnd.sample(sorted(after.items()), len(after)))
    follow_up = CooperativeStickyAssignor().assign_step(topics, subs(shuffled, now, 3))
    assert not follow_up.needs_follow_up
    assert follow_up.revoked == {}
    final = {m: a.partitions for m, a in follow_up.assignment.items()}
    loads = {m: len(p) for m, p in final.items()}
    for low, high in itertools.permutations(final, 2):
        if loads[low] <= loads[high] - 2:
            assert all(tp.topic not in after[low] for tp in final[high])


@st.composite
def reported_groups(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, Subscription]]:
    """Members with any subscriptions, owning any partitions (of topics they no longer read,
    of deleted topics, beyond a topic's count, claimed twice) with any generation."""
    counts = {t: draw(st.integers(0, 6)) for t in ("t0", "t1", "t2")}
    named = [*counts, "gone"]
    partitions = st.builds(TopicPartition, st.sampled_from(named), st.integers(0, 7))
    subscriptions = {}
    for i in range(draw(st.integers(1, 6))):
        topics = draw(st.lists(st.sampled_from(named), min_size=1, unique=True))
        owned = draw(st.lists(partitions, max_size=8))
        generation = draw(st.integers(NO_GENERATION, 3))
        subscriptions[f"m{i}"] = Subscription(tuple(topics), b"", tuple(owned), generation)
    return counts, subscriptions


@given(reported_groups())
def test_its_cooperative_step_is_the_generic_one(case) -> None:
    """Worked out on numbers, what it revokes, withholds and hands out is what `cooperative_step`
    makes of the sticky target (which reads the same owned partitions and generations)."""
    counts, subscriptions = case
    step = CooperativeStickyAssignor().assign_step(counts, subscriptions)
    target = StickyAssignor().assign(counts, subscriptions)
    owned = {m: s.owned_partitions for m, s in subscriptions.items()}
    assert step == cooperative_step(target, owned)
