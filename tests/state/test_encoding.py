"""Window key layouts: byte order must equal (segment, timestamp, sequence) order within a key,
and one key's prefix must never be a prefix of another key's records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.errors import ProtocolDecodeError
from streamjoin.state.stores.encoding import (
    NO_TIME,
    SEQUENCE_MODULUS,
    decode_meta,
    encode_meta,
    encode_ts,
    encode_varint,
    key_prefix,
    local_key,
    segment_prefix,
    split_changelog_key,
    window_changelog_key,
)

timestamps = st.integers(min_value=NO_TIME, max_value=(1 << 63) - 1)
sequences = st.integers(min_value=0, max_value=SEQUENCE_MODULUS - 1)
keys = st.binary(max_size=300)


@given(timestamps, timestamps)
def test_timestamp_bytes_sort_like_the_numbers(a: int, b: int) -> None:
    assert (encode_ts(a) < encode_ts(b)) == (a < b)
    assert len(encode_ts(a)) == 8


@given(st.integers(min_value=0, max_value=1 << 40), st.integers(min_value=0, max_value=1 << 40))
def test_varints_are_prefix_free(a: int, b: int) -> None:
    first, second = encode_varint(a), encode_varint(b)
    if a != b:
        assert not second.startswith(first)
        assert not first.startswith(second)


def test_varint_sizes() -> None:
    assert encode_varint(0) == b"\x00"
    assert encode_varint(127) == b"\x7f"
    assert encode_varint(128) == b"\x80\x01"
    assert len(encode_varint(300)) == 2


@given(keys, timestamps, sequences)
def test_changelog_key_round_trip(key: bytes, timestamp: int, sequence: int) -> None:
    assert split_changelog_key(window_changelog_key(key, timestamp, sequence)) == (
        key,
        timestamp,
        sequence,
    )


def test_short_changelog_key_is_refused() -> None:
    with pytest.raises(ProtocolDecodeError, match="does not hold a 115-byte key"):
        split_changelog_key(b"short")
    with pytest.raises(ProtocolDecodeError, match="no valid length"):
        split_changelog_key(b"")


@given(keys, st.integers(-1000, 1000), timestamps, sequences)
def test_local_key_starts_with_the_key_prefix(
    key: bytes, segment: int, timestamp: int, sequence: int
) -> None:
    local = local_key(segment, window_changelog_key(key, timestamp, sequence))
    assert local.startswith(key_prefix(segment, key))
    assert local.startswith(segment_prefix(segment))


@given(keys, keys, st.integers(-5, 5), timestamps, sequences)
def test_no_record_of_another_key_shares_a_key_prefix(
    key: bytes, other: bytes, segment: int, timestamp: int, sequence: int
) -> None:
    if key != other:
        other_record = local_key(segment, window_changelog_key(other, timestamp, sequence))
        assert not other_record.startswith(key_prefix(segment, key))


@given(keys, st.lists(st.tuples(timestamps, sequences), min_size=2, max_size=20))
def test_records_of_one_key_sort_by_time_then_sequence(
    key: bytes, points: list[tuple[int, int]]
) -> None:
    def local(point: tuple[int, int]) -> bytes:
        return local_key(7, window_changelog_key(key, *point))

    assert sorted(points) == sorted(points, key=local)


@given(st.integers(-(1 << 40), 1 << 40), st.integers(-(1 << 40), 1 << 40))
def test_segments_sort_first(a: int, b: int) -> None:
    assert (segment_prefix(a) < segment_prefix(b)) == (a < b)


@given(timestamps, sequences)
def test_meta_round_trip(stream_time: int, sequence: int) -> None:
    assert decode_meta(encode_meta(stream_time, sequence)) == (stream_time, sequence)


def test_meta_of_wrong_size_is_refused() -> None:
    with pytest.raises(ProtocolDecodeError, match="metadata"):
        decode_meta(b"\x00" * 3)
