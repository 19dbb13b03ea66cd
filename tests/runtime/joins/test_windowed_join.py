"""Windowed stream-stream join semantics (Kafka Streams since 3.1), through the test driver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from streamjoin.testing import TestDriver

MakeDriver = Callable[..., TestDriver]


def values(driver: TestDriver) -> list[tuple[Any, Any, int]]:
    """(left, right, timestamp) of every new output record."""
    return [(r.value["l"], r.value["r"], r.timestamp) for r in driver.read_output("out")]


def test_inner_join_window_bounds_are_inclusive(make_driver: MakeDriver) -> None:
    driver = make_driver("inner", before=10, after=20)
    driver.pipe("L", "l", key="k", timestamp=100)
    for t in (89, 90, 110, 120, 121):
        driver.pipe("R", f"r{t}", key="k", timestamp=t)
    assert values(driver) == [("l", "r90", 100), ("l", "r110", 110), ("l", "r120", 120)]


def test_right_record_looks_back_and_ahead_with_the_window_swapped(make_driver: MakeDriver) -> None:
    driver = make_driver("inner", before=10, after=20)
    driver.pipe("R", "r", key="k", timestamp=100)
    for t in (79, 80, 110, 111):
        driver.pipe("L", f"l{t}", key="k", timestamp=t)
    # L at t joins R in [t-10, t+20]: R=100 is in range for L=80 and L=110, not 79 or 111.
    assert values(driver) == [("l80", "r", 100), ("l110", "r", 110)]


def test_output_keeps_the_join_key_and_the_later_timestamp(make_driver: MakeDriver) -> None:
    driver = make_driver("inner")
    driver.pipe("R", "r", key="auction-7", timestamp=105)
    driver.pipe("L", "l", key="auction-7", timestamp=100)
    [record] = driver.read_output("out")
    assert (record.key, record.timestamp) == ("auction-7", 105)
    assert record.headers == {"streamjoin.left": b"L:0:0", "streamjoin.right": b"R:0:0"}


def test_different_keys_never_join(make_driver: MakeDriver) -> None:
    driver = make_driver("inner")
    driver.pipe("L", "l", key="a", timestamp=100)
    driver.pipe("R", "r", key="b", timestamp=100)
    assert values(driver) == []


def test_duplicates_on_both_sides_join_pairwise(make_driver: MakeDriver) -> None:
    driver = make_driver("inner")
    for side, name in (("L", "l1"), ("L", "l2"), ("R", "r1"), ("R", "r2")):
        driver.pipe(side, name, key="k", timestamp=100)
    assert sorted(values(driver)) == [
        ("l1", "r1", 100),
        ("l1", "r2", 100),
        ("l2", "r1", 100),
        ("l2", "r2", 100),
    ]


def test_left_non_match_waits_until_no_match_can_still_come(make_driver: MakeDriver) -> None:
    # before + after + grace = 10 + 10 + 5: the left store keeps L@100 while the left side's
    # stream time is below 125 (a right record could find it until then).
    driver = make_driver("left", before=10, after=10, grace=5)
    driver.pipe("L", "l", key="k", timestamp=100)
    driver.pipe("R", "other", key="x", timestamp=200)  # the right side's time: no matter
    driver.pipe("L", "other", key="x", timestamp=124)
    assert values(driver) == []
    driver.pipe("L", "other", key="x", timestamp=125)
    assert values(driver) == [("l", None, 100)]
    driver.advance_stream_time(10_000)
    assert values(driver) == [("other", None, 124), ("other", None, 125)]


def test_out_of_order_match_within_grace_is_never_preceded_by_a_non_match(
    make_driver: MakeDriver,
) -> None:
    """Kafka Streams would emit (l, None) at stream time 111 and then (l, r) for R@105."""
    driver = make_driver("left", before=10, after=10, grace=0)
    driver.pipe("L", "l", key="k", timestamp=100)
    driver.pipe("L", "x", key="other", timestamp=115)
    # R@105 is not late (its window [95, 115] + grace 0 has not closed at stream time 115).
    driver.pipe("R", "r", key="k", timestamp=105)
    driver.advance_stream_time(1_000)
    emitted = values(driver)
    assert ("l", "r", 105) in emitted
    assert ("l", None, 100) not in emitted


def test_left_join_emits_matches_at_once_and_no_right_non_matches(make_driver: MakeDriver) -> None:
    driver = make_driver("left")
    driver.pipe("R", "lonely", key="r-only", timestamp=100)
    driver.pipe("L", "l", key="k", timestamp=100)
    driver.pipe("R", "r", key="k", timestamp=101)
    assert values(driver) == [("l", "r", 101)]
    driver.advance_stream_time(10_000)
    assert values(driver) == []


def test_outer_join_emits_non_matches_of_both_sides_once(make_driver: MakeDriver) -> None:
    driver = make_driver("outer", before=5, after=5)
    driver.pipe("L", "l", key="a", timestamp=100)
    driver.pipe("R", "r", key="b", timestamp=101)
    driver.pipe("L", "l2", key="c", timestamp=102)
    driver.pipe("R", "r2", key="c", timestamp=103)
    assert values(driver) == [("l2", "r2", 103)]
    driver.advance_stream_time(10_000)
    assert values(driver) == [("l", None, 100), (None, "r", 101)]
    driver.advance_stream_time(20_000)
    assert values(driver) == []


def test_a_late_record_joins_the_partners_the_other_side_still_holds(
    make_driver: MakeDriver,
) -> None:
    """Issue 34's first example, as Kafka Streams 4.4 gives it: R@35 is behind its window plus
    grace (35 + 13 + 10 < 64) but L2@45 is still in the left store (it keeps 13 + 1 + 10 ms)."""
    driver = make_driver("inner", before=13, after=1, grace=10)
    driver.pipe("L", "L2", key="a", timestamp=45)
    driver.pipe("L", "L5", key="a", timestamp=64)
    driver.pipe("R", "R2", key="a", timestamp=35)
    assert values(driver) == [("L2", "R2", 45)]
    counters = driver.counters("j")
    assert (counters.late_joined, counters.late_no_partner) == (1, 0)


def test_a_late_record_finds_only_what_the_other_store_still_keeps(
    make_driver: MakeDriver,
) -> None:
    """Each side's store keeps records by its own side's stream time (as Kafka Streams' window
    stores): L@0 is gone once the left side has seen 100, not when the right side has."""
    driver = make_driver("inner", before=5, after=5, grace=0)
    driver.pipe("L", "l", key="a", timestamp=0)
    driver.pipe("R", "later", key="b", timestamp=100)
    driver.pipe("R", "r", key="a", timestamp=3)
    assert values(driver) == [("l", "r", 3)]
    driver.pipe("L", "later", key="b", timestamp=100)
    driver.pipe("R", "r2", key="a", timestamp=3)
    assert values(driver) == [("later", "later", 100)]
    assert driver.counters("j").late_no_partner == 1


def test_a_late_left_record_without_partner_is_a_non_match_once_none_can_come(
    make_driver: MakeDriver,
) -> None:
    """Issue 34's second example. L@16 is late and finds no partner; a right record at 13..18
    could still find it in the left store until the left side's stream time passes 16 + 3 + 2
    + 10, so it is emitted then (Kafka Streams emits it at once, and would also emit the join
    if such a record came)."""
    driver = make_driver("left", before=3, after=2, grace=10)
    driver.pipe("R", "R1", key="b", timestamp=37)
    driver.pipe("L", "L1", key="b", timestamp=16)
    assert values(driver) == []
    driver.pipe("L", "L2", key="x", timestamp=31)
    assert values(driver) == [("L1", None, 16)]
    driver.pipe("L", "L3", key="b", timestamp=1)  # older than the left store keeps: at once
    assert values(driver) == [("L3", None, 1)]
    counters = driver.counters("j")
    assert (counters.late_joined, counters.late_no_partner) == (0, 2)


def test_a_pending_late_record_still_joins_a_later_partner(make_driver: MakeDriver) -> None:
    driver = make_driver("left", before=3, after=2, grace=10)
    driver.pipe("R", "R1", key="b", timestamp=37)
    driver.pipe("L", "L1", key="b", timestamp=16)
    driver.pipe("R", "R2", key="b", timestamp=15)
    driver.advance_stream_time(1_000)
    assert values(driver) == [("L1", "R2", 16)]


def test_null_values_are_skipped_and_null_keys_follow_kafka_streams(
    make_driver: MakeDriver,
) -> None:
    driver = make_driver("left")
    driver.pipe("L", None, key="k", timestamp=100)
    driver.pipe("R", "r", key=None, timestamp=100)
    driver.pipe("L", "keyless", key=None, timestamp=100)
    # A keyless left record can never match: a left join emits it at once (KIP-962); a
    # keyless right record can take part in nothing: a dead letter.
    assert values(driver) == [("keyless", None, 100)]
    assert driver.counters("j").skipped == 1
    [dead] = driver.dead_letters()
    assert dict(dead.headers)["streamjoin.error.class"] == b"KeylessRecordError"


@pytest.mark.parametrize("how", ["left", "outer"])
def test_non_matches_come_in_time_order(make_driver: MakeDriver, how: str) -> None:
    driver = make_driver(how, before=0, after=0, grace=10)
    for t, key in ((105, "b"), (100, "a"), (103, "c")):
        driver.pipe("L", key, key=key, timestamp=t)
    driver.advance_stream_time(1_000)
    assert [v[2] for v in values(driver)] == [100, 103, 105]


class CountingSerde:
    """str values, counting decodes; `immutable` as a serde declares it."""

    name = "counting"

    def __init__(self, immutable: bool) -> None:
        self.immutable = immutable
        self.decoded = 0

    def serialize(self, value: Any) -> bytes:
        return str(value).encode()

    def deserialize(self, data: bytes) -> Any:
        self.decoded += 1
        return data.decode() if self.immutable else {"v": data.decode()}


@pytest.mark.parametrize("immutable", [True, False])
def test_immutable_values_are_decoded_once_mutable_ones_afresh_for_each_joiner_call(
    immutable: bool,
) -> None:
    from streamjoin import App, JoinWindows

    serdes = CountingSerde(immutable), CountingSerde(immutable)
    app = App("decoding")
    left, right = app.topic("L", value_type=serdes[0]), app.topic("R", value_type=serdes[1])
    seen: list[tuple[Any, Any]] = []

    def joiner(l_value: Any, r_value: Any) -> str:
        seen.append((l_value, r_value))
        if isinstance(l_value, dict):
            l_value["v"] = "changed by the joiner"
        return "out"

    window = JoinWindows(before=10, after=10, grace=0)
    app.join(left, right, window=window, how="left", into="out", name="j")(joiner)
    with TestDriver(app) as driver:
        driver.pipe("L", "l", key="k", timestamp=100)
        driver.pipe("L", "lonely", key="x", timestamp=100)
        driver.pipe("R", "r1", key="k", timestamp=101)
        driver.pipe("R", "r2", key="k", timestamp=102)
        driver.advance_stream_time(10_000)
    lefts = [l_value for l_value, _ in seen]
    if immutable:
        assert lefts == ["l", "l", "lonely"]
        assert (serdes[0].decoded, serdes[1].decoded) == (2, 2)  # each record once
    else:
        # every joiner call gets its own copy, so a change made in one never reaches the next
        assert len(seen) == 3 and all(
            l_value == {"v": "changed by the joiner"} for l_value in lefts
        )
        assert len({id(l_value) for l_value in lefts}) == 3
        assert serdes[0].decoded == 5  # l on arrival and for each match, lonely twice
