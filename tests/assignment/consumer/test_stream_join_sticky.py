"""`stream-join-sticky`: its proposal's impressions/clicks tables and its rules as properties."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.sticky.stream_join import (
    StreamJoinStickyAssignor,
    select_numbers,
)
from streamjoin.assignment.consumer.sticky.stream_join_user_data import (
    decode_stream_join_assignment,
    decode_stream_join_subscription,
    encode_stream_join_assignment,
    encode_stream_join_subscription,
)
from streamjoin.assignment.model import Assignment, GroupAssignment, Subscription, TopicPartition
from streamjoin.errors import ProtocolDecodeError

JOIN = ("impressions", "clicks")
TOPICS = {"impressions": 10, "clicks": 10}


def member(numbers: list[int] | None, epoch: int = 4, topics: tuple[str, ...] = JOIN):
    user_data = b"" if numbers is None else encode_stream_join_subscription(numbers, epoch)
    return Subscription(topics, user_data)


def numbers_per_topic(result: GroupAssignment) -> dict[str, dict[str, list[int]]]:
    return {
        m: {t: sorted(tp.partition for tp in a.partitions if tp.topic == t) for t in JOIN}
        for m, a in result.items()
    }


VALID = {"A": [0, 1, 2], "B": [3, 4, 5], "C": [6, 7], "D": [8, 9]}


def test_the_seeds_valid_assignment_is_kept_as_is() -> None:
    result = StreamJoinStickyAssignor().assign(TOPICS, {m: member(n) for m, n in VALID.items()})
    assert numbers_per_topic(result) == {
        m: {"impressions": n, "clicks": n} for m, n in VALID.items()
    }


def test_when_d_leaves_only_partitions_8_and_9_move() -> None:
    """The seed's better assignment: A 0,1,2,9; B 3,4,5; C 6,7,8 in both topics."""
    group = {m: member(n) for m, n in VALID.items() if m != "D"}
    result = StreamJoinStickyAssignor().assign(TOPICS, group)
    expected = {"A": [0, 1, 2, 9], "B": [3, 4, 5], "C": [6, 7, 8]}
    assert numbers_per_topic(result) == {
        m: {"impressions": n, "clicks": n} for m, n in expected.items()
    }


def test_the_range_like_reshuffle_of_the_seed_does_not_happen() -> None:
    group = {m: member(n) for m, n in VALID.items() if m != "D"}
    result = numbers_per_topic(StreamJoinStickyAssignor().assign(TOPICS, group))
    assert 3 not in result["A"]["impressions"]  # the seed's unnecessary move of partition 3
    assert 6 not in result["B"]["impressions"]  # and of partition 6


def test_round_robin_assignment_from_the_seed_is_rejected_as_a_start() -> None:
    """Starting from scratch, every member gets the same numbers in both topics."""
    result = numbers_per_topic(
        StreamJoinStickyAssignor().assign(TOPICS, {m: member(None) for m in "ABCD"})
    )
    for numbers in result.values():
        assert numbers["impressions"] == numbers["clicks"]
    assert sorted(n for v in result.values() for n in v["clicks"]) == list(range(10))


def test_a_new_member_steals_from_the_longest_lists() -> None:
    group = {**{m: member(n) for m, n in VALID.items()}, "E": member(None)}
    result = numbers_per_topic(StreamJoinStickyAssignor().assign(TOPICS, group))
    assert {m: v["clicks"] for m, v in result.items()} == {
        "A": [0, 1],
        "B": [3, 4],
        "C": [6, 7],
        "D": [8, 9],
        "E": [2, 5],
    }


def test_only_the_smallest_partition_count_is_assignable() -> None:
    topics = {"impressions": 10, "clicks": 12}  # clicks grew first
    result = StreamJoinStickyAssignor().assign(topics, {m: member(None) for m in "AB"})
    assigned = {tp for a in result.values() for tp in a.partitions}
    assert TopicPartition("clicks", 10) not in assigned
    assert len(assigned) == 20


def test_a_member_with_fewer_topics_gets_only_those_topics_share() -> None:
    topics = {**TOPICS, "views": 10}
    group = {
        "A": member([0, 1, 2, 3, 4], topics=(*JOIN, "views")),
        "B": member([5, 6, 7, 8, 9]),
    }
    result = StreamJoinStickyAssignor().assign(topics, group)
    views = {tp.partition for tp in result["A"].partitions if tp.topic == "views"}
    assert views == {0, 1, 2, 3, 4}
    assert all(tp.topic != "views" for tp in result["B"].partitions)


def test_the_higher_epoch_wins_and_the_next_epoch_is_handed_out() -> None:
    group = {"A": member([0, 1, 2, 3], epoch=2), "B": member([2, 3, 4, 5], epoch=7)}
    result = StreamJoinStickyAssignor().assign(
        {"t": 6}, {m: Subscription(("t",), s.user_data) for m, s in group.items()}
    )
    assert {tp.partition for tp in result["B"].partitions} == {2, 3, 4}
    assert {decode_stream_join_assignment(a.user_data) for a in result.values()} == {8}


def test_a_member_remembers_its_numbers_and_epoch() -> None:
    assignor = StreamJoinStickyAssignor()
    assert assignor.subscription_user_data(list(JOIN)) == b""
    partitions = (TopicPartition("clicks", 3), TopicPartition("impressions", 3))
    assignor.on_assignment(Assignment(partitions, encode_stream_join_assignment(5)), 99)
    data = decode_stream_join_subscription(assignor.subscription_user_data(list(JOIN)))
    assert (data.owned_numbers, data.epoch) == ((3,), 5)


def test_newer_user_data_versions_are_read_and_bad_bytes_rejected() -> None:
    newer = b"\x00\x01" + encode_stream_join_subscription([1, 2], 3)[2:] + b"future fields"
    assert decode_stream_join_subscription(newer).owned_numbers == (1, 2)
    with pytest.raises(ProtocolDecodeError, match="negative version"):
        decode_stream_join_assignment(b"\xff\xff\x00\x00\x00\x01")
    with pytest.raises(ProtocolDecodeError, match="truncated"):
        decode_stream_join_subscription(b"\x00\x00\x00")


@st.composite
def groups(draw: st.DrawFn):
    count = draw(st.integers(1, 12))
    names = [f"m{i}" for i in range(draw(st.integers(1, 6)))]
    owner = {n: draw(st.sampled_from([*names, None])) for n in range(count)}
    previous = {m: [n for n, o in owner.items() if o == m] for m in names}
    return count, previous


@given(groups(), st.data())
def test_properties(case, data) -> None:
    count, previous = case
    topics = {"a": count, "b": count + data.draw(st.integers(0, 2))}

    def run(prev, order):
        subscriptions = {
            m: Subscription(
                ("b", "a"), encode_stream_join_subscription(prev[m], 1) if prev[m] else b""
            )
            for m in order
        }
        return StreamJoinStickyAssignor().assign(topics, subscriptions)

    names = list(previous)
    result = run(previous, names)
    numbers = {m: sorted({tp.partition for tp in a.partitions}) for m, a in result.items()}
    # Co-partitioned: each member has the same numbers in both topics; one owner per number.
    for m, a in result.items():
        assert sorted(tp for tp in a.partitions) == sorted(
            TopicPartition(t, n) for t in ("a", "b") for n in numbers[m]
        )
    assert sorted(n for ns in numbers.values() for n in ns) == list(range(count))
    sizes = [len(ns) for ns in numbers.values()]
    assert max(sizes) - min(sizes) <= 1
    # Determinism and stability.
    assert run(previous, random.Random(count).sample(names, len(names))) == result
    assert run(numbers, names) == run(numbers, names[::-1])
    again = run(numbers, names)
    assert {m: sorted({tp.partition for tp in a.partitions}) for m, a in again.items()} == numbers
    # A member leaving moves only its numbers.
    if len(names) > 1:
        leaver = data.draw(st.sampled_from(names))
        rest = [m for m in names if m != leaver]
        after = run(numbers, rest)
        for m in rest:
            assert set(numbers[m]) <= {tp.partition for tp in after[m].partitions}


def test_select_numbers_keeps_the_most_possible() -> None:
    # 10 numbers, 3 members: A owned 6, B owned 4, C is new: one of A, B keeps 4, the other 3.
    result = select_numbers(10, [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9], []])
    kept = len(set(result[0]) & {0, 1, 2, 3, 4, 5}) + len(set(result[1]) & {6, 7, 8, 9})
    assert kept == 7
    assert sorted(len(r) for r in result) == [3, 3, 4]
