"""The pending non-matches index: what a restarted task loads from the store answers as the
index that wrote it (the same entries, due in the same order)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.runtime.joins.pending import PendingNonMatches
from streamjoin.runtime.joins.records import Side
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.kv_store import KeyValueStore

_SPEC = StoreSpec.kv("pending")


class _Changelog:
    """Takes a flush's changelog records; the test reads the store back, not the changelog."""

    def append(self, key: bytes, value: bytes | None, timestamp: int | None) -> None:
        pass


def _open(path: Path) -> KeyValueStore:
    store = KeyValueStore(_SPEC, path, MemoryBudget())
    store.attach_writer(_Changelog())  # type: ignore[arg-type]
    return store


_sides = st.sampled_from([Side.LEFT, Side.RIGHT])
_adds = st.tuples(
    st.just("add"),
    st.integers(0, 5),
    _sides,
    st.sampled_from([b"a", b"b"]),
    st.integers(0, 5),
)
_discards = st.tuples(st.just("discard"), st.integers(0, 5), _sides, st.sampled_from([b"a", b"b"]))
_pops = st.tuples(st.just("pop"), _sides, st.integers(0, 6))


def _apply(pending: PendingNonMatches, step: tuple[Any, ...]) -> None:
    match step:
        case ("add", timestamp, side, key, offset):
            pending.add(timestamp, side, key, offset, b"%d" % offset)
        case ("discard", timestamp, side, key):
            pending.discard(timestamp, side, key)
        case ("pop", side, timestamp):
            pending.pop_until(side, timestamp)


def _due(pending: PendingNonMatches) -> list[list[tuple[int, Side, bytes, bytes]]]:
    return [
        [(t, s, key, stored) for t, s, key, stored, _ in pending.pop_until(side, 1 << 62)]
        for side in (Side.LEFT, Side.RIGHT)
    ]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_adds, _discards, _pops), max_size=25))
def test_an_index_loaded_from_its_store_answers_as_the_index_that_wrote_it(
    steps: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "pending"
        store = _open(path)
        live = PendingNonMatches(store)
        for step in steps:
            _apply(live, step)
        store.begin_flush()
        store.finish_flush()
        expected = _due(live)  # its deletions stay unflushed: closing drops them
        store.close()
        reopened = _open(path)
        try:
            assert _due(PendingNonMatches(reopened)) == expected
        finally:
            reopened.close()


def test_a_replayed_record_is_due_in_offset_order_after_its_later_neighbour() -> None:
    """A replay adds a lower offset after a higher one under the same (timestamp, side, key)."""
    with tempfile.TemporaryDirectory() as scratch:
        pending = PendingNonMatches(_open(Path(scratch) / "pending"))
        pending.add(3, Side.LEFT, b"k", 1, b"second")
        pending.add(3, Side.LEFT, b"k", 0, b"first")
        pending.add(3, Side.LEFT, b"k", 1, b"second")  # replayed again: still one entry
        due = [stored for _, _, _, stored, _ in pending.pop_until(Side.LEFT, 4)]
        assert due == [b"first", b"second"]
