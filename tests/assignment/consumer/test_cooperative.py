from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.cooperative import cooperative_step
from streamjoin.assignment.model import Assignment, TopicPartition


def tp(text: str) -> TopicPartition:
    topic, partition = text.split("-")
    return TopicPartition(topic, int(partition))


def parts(*texts: str) -> tuple[TopicPartition, ...]:
    return tuple(tp(t) for t in texts)


def test_a_partition_changing_owner_is_revoked_now_and_handed_over_later() -> None:
    target = {"a": Assignment(parts("t-0"), b"x"), "b": Assignment(parts("t-1", "t-2"))}
    owned = {"a": parts("t-0", "t-1"), "b": ()}
    step = cooperative_step(target, owned)
    assert step.assignment == {"a": Assignment(parts("t-0"), b"x"), "b": Assignment(parts("t-2"))}
    assert step.revoked == {"a": parts("t-1")}
    assert step.pending == {"b": parts("t-1")}
    assert step.needs_follow_up
    assert step.target() == target


def test_partitions_of_members_that_left_are_handed_out_at_once() -> None:
    target = {"b": Assignment(parts("t-0", "t-1"))}
    step = cooperative_step(target, {"gone": parts("t-0"), "b": parts("t-1")})
    assert step.assignment == target
    assert not step.needs_follow_up
    assert step.revoked == {}


def test_a_partition_claimed_by_two_members_waits_for_both() -> None:
    target = {"a": Assignment(()), "b": Assignment(()), "c": Assignment(parts("t-0"))}
    step = cooperative_step(target, {"a": parts("t-0"), "b": parts("t-0")})
    assert step.assignment["c"].partitions == ()
    assert step.revoked == {"a": parts("t-0"), "b": parts("t-0")}
    assert step.pending == {"c": parts("t-0")}


owners = st.dictionaries(
    st.integers(0, 11), st.lists(st.sampled_from("abcd"), max_size=2, unique=True)
)


@given(owners, st.dictionaries(st.integers(0, 11), st.sampled_from("abcd")))
def test_never_hands_out_what_another_member_still_owns(now_owned, wanted) -> None:
    members = "abcd"
    owned = {m: [TopicPartition("t", p) for p, ms in now_owned.items() if m in ms] for m in members}
    target = {
        m: Assignment(tuple(TopicPartition("t", p) for p, w in sorted(wanted.items()) if w == m))
        for m in members
    }
    step = cooperative_step(target, owned)
    for member, given_ in step.assignment.items():
        for partition in set(given_.partitions) - set(owned[member]):
            assert all(partition not in owned[o] for o in members if o != member)
    # Everything the target moves is either handed out now or pending, never lost.
    assert step.target() == target
    # A second round, after members revoked what they were told to, needs no third.
    after = {m: list(step.assignment[m].partitions) for m in members}
    assert not cooperative_step(target, after).needs_follow_up


@given(
    st.dictionaries(st.sampled_from("abcd"), st.lists(st.integers(0, 7), max_size=5)),
    st.dictionaries(st.sampled_from("abcd"), st.lists(st.integers(0, 7), max_size=5, unique=True)),
)
def test_withholds_exactly_what_another_reported_member_owns(claims, targets) -> None:
    """The rule itself, for any target (even one that gives a partition twice) and claims."""
    owned = {m: [TopicPartition("t", p) for p in ps] for m, ps in claims.items()}
    target = {m: Assignment(tuple(TopicPartition("t", p) for p in ps)) for m, ps in targets.items()}
    step = cooperative_step(target, owned)
    for member, given_ in target.items():
        mine = set(owned.get(member, ()))
        others = {tp for o, tps in owned.items() if o != member and o in target for tp in tps}
        withheld = tuple(tp for tp in given_.partitions if tp not in mine and tp in others)
        assert step.pending.get(member, ()) == withheld
        assert step.assignment[member].partitions == tuple(
            tp for tp in given_.partitions if tp not in withheld
        )
        assert step.revoked.get(member, ()) == tuple(sorted(mine - set(given_.partitions)))
