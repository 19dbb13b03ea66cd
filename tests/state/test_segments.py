"""Window time arithmetic against brute force over small numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.state.stores.segments import Segments

small = st.integers(min_value=-200, max_value=200)
positive = st.integers(min_value=1, max_value=50)


@given(positive, positive, small)
def test_a_segment_is_deleted_exactly_when_all_its_timestamps_are_expired(
    retention: int, interval: int, stream_time: int
) -> None:
    segments = Segments(retention, interval)
    first_live = segments.first_live_segment(stream_time)
    for segment in range(first_live - 5, first_live + 5):
        stamps = range(segment * interval, (segment + 1) * interval)
        all_expired = all(segments.is_expired(ts, stream_time) for ts in stamps)
        assert all_expired == (segment < first_live)


@given(positive, positive, small, small, small)
def test_live_bounds_keep_exactly_the_live_timestamps_in_range(
    retention: int, interval: int, stream_time: int, t_from: int, t_to: int
) -> None:
    segments = Segments(retention, interval)
    wanted = [
        ts
        for ts in range(t_from, t_to + 1)
        if ts <= stream_time and not segments.is_expired(ts, stream_time)
    ]
    bounds = segments.live_bounds(t_from, t_to, stream_time)
    if bounds is None:
        assert wanted == []
    else:
        assert wanted == list(range(bounds[0], bounds[1] + 1))


def test_expiry_boundary() -> None:
    segments = Segments(retention_ms=100, interval_ms=50)
    assert segments.is_expired(900, 1000)
    assert not segments.is_expired(901, 1000)
    assert segments.segment_of(-1) == -1
    assert segments.first_live_segment(1000) == 18  # 900 is in segment 18, still holding 901..
