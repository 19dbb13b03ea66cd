"""The newest records of a window store in memory: what stays, what goes, and the floor below
which they no longer answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.state.stores.byte_budget import ByteBudget
from streamjoin.state.stores.encoding import NO_TIME
from streamjoin.state.stores.recent_records import RECORD_OVERHEAD_BYTES, RecentRecords

ONE = 1 + 1 + RECORD_OVERHEAD_BYTES
"""Estimated size of a record with a one-byte key and a one-byte value."""


def test_answers_in_time_order_with_equal_timestamps_in_put_order() -> None:
    recent = RecentRecords(NO_TIME, ByteBudget(10 * ONE))
    for ts, value in [(5, b"a"), (3, b"b"), (5, b"c"), (4, b"d")]:
        recent.add(b"k", ts, value, value.upper())
    recent.add(b"j", 4, b"x", None)
    assert recent.get(b"k", 4, 5) == [(4, b"d", b"D"), (5, b"a", b"A"), (5, b"c", b"C")]
    assert recent.get(b"missing", 0, 10) == []


def test_over_budget_the_oldest_put_goes_and_the_floor_rises_to_it() -> None:
    recent = RecentRecords(NO_TIME, ByteBudget(2 * ONE))
    recent.add(b"k", 10, b"a", None)
    recent.add(b"k", 5, b"b", None)  # out of order: put second, older
    recent.add(b"k", 20, b"c", None)  # evicts the record at 10
    assert recent.floor == 10
    assert len(recent) == 2
    # the record at 5 is still held but at or below the floor: it is no longer answered
    assert recent.get(b"k", 0, 30) == [(20, b"c", None)]


def test_expire_lets_go_of_old_records_front_first() -> None:
    recent = RecentRecords(NO_TIME, ByteBudget(100 * ONE))
    for ts in (1, 2, 9, 3):
        recent.add(b"k", ts, b"v", None)
    recent.expire(2)
    assert [ts for ts, _, _ in recent.get(b"k", 0, 10)] == [3, 9]
    recent.expire(3)  # the record at 3 waits behind the one at 9, put before it
    assert len(recent) == 2
    assert recent.floor == 2


def test_reset_and_raise_floor() -> None:
    recent = RecentRecords(NO_TIME, ByteBudget(100 * ONE))
    recent.add(b"k", 7, b"v", None)
    recent.raise_floor(7)
    assert recent.get(b"k", 0, 10) == []
    recent.raise_floor(3)
    assert recent.floor == 7
    recent.reset(2)
    assert (len(recent), recent.size_bytes, recent.floor) == (0, 0, 2)


@given(
    st.lists(st.tuples(st.sampled_from([b"a", b"b"]), st.integers(0, 50)), max_size=40),
    st.integers(0, 8),
    st.integers(0, 50),
    st.integers(0, 50),
)
def test_holds_every_record_above_the_floor_within_the_budget(
    puts: list[tuple[bytes, int]], budget_records: int, low: int, width: int
) -> None:
    recent = RecentRecords(NO_TIME, ByteBudget(budget_records * ONE))
    for i, (key, ts) in enumerate(puts):
        recent.add(key, ts, b"v", i)
    assert recent.size_bytes <= budget_records * ONE
    for key in (b"a", b"b"):
        expected = sorted(
            (ts, i)
            for i, (k, ts) in enumerate(puts)
            if k == key and ts > recent.floor and low <= ts <= low + width
        )
        assert [(ts, memo) for ts, _, memo in recent.get(key, low, low + width)] == expected


def test_stores_share_one_budget_and_a_put_evicts_from_its_own_store() -> None:
    budget = ByteBudget(3 * ONE)
    left, right = RecentRecords(NO_TIME, budget), RecentRecords(NO_TIME, budget)
    left.add(b"k", 1, b"a", None)
    left.add(b"k", 2, b"b", None)
    right.add(b"k", 1, b"c", None)
    assert budget.used_bytes == 3 * ONE
    right.add(b"k", 2, b"d", None)  # over: right lets go of its oldest, left keeps both
    assert (len(left), len(right), right.floor) == (2, 1, 1)
    assert budget.used_bytes == 3 * ONE
    left.reset(5)  # a store closing gives its share back
    assert budget.used_bytes == ONE
    right.add(b"k", 3, b"e", None)
    assert (len(right), budget.used_bytes) == (2, 2 * ONE)


@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from([b"a", b"bb"]), st.integers(0, 50)),
        max_size=60,
    ),
    st.integers(0, 10),
)
def test_shared_budget_bounds_the_sum_and_each_store_answers_above_its_floor(
    puts: list[tuple[int, bytes, int]], budget_records: int
) -> None:
    budget = ByteBudget(budget_records * ONE)
    stores = [RecentRecords(NO_TIME, budget) for _ in range(3)]
    for i, (store, key, ts) in enumerate(puts):
        stores[store].add(key, ts, b"v", i)
        assert budget.used_bytes == sum(s.size_bytes for s in stores)
        assert budget.used_bytes <= budget.max_bytes
    for number, recent in enumerate(stores):
        for key in (b"a", b"bb"):
            expected = sorted(
                (ts, i)
                for i, (s, k, ts) in enumerate(puts)
                if s == number and k == key and ts > recent.floor
            )
            assert [(ts, memo) for ts, _, memo in recent.get(key, 0, 50)] == expected
