"""The bulk int32 array helpers added to wire.py for partition lists."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.wire import Reader, Writer
from streamjoin.errors import ProtocolDecodeError


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=50))
def test_round_trip_and_same_bytes_as_the_item_by_item_array(values: list[int]) -> None:
    data = Writer().int32_array(values).getvalue()
    assert data == Writer().array(values, Writer.int32).getvalue()
    assert Reader(data, "test").int32_array() == values


def test_null_array_reads_as_empty_and_lies_are_caught() -> None:
    assert Reader(b"\xff\xff\xff\xff", "test").int32_array() == []
    with pytest.raises(ProtocolDecodeError, match="test: impossible array length 2"):
        Reader(b"\x00\x00\x00\x02\x00\x00\x00\x01", "test").int32_array()
