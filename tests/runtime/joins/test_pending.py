"""The pending non-matches index: what a restarted task loads from the store answers as the
index that wrote it (the same entries, due in the same order), and an index held to a small
part of the memory budget answers as one that holds everything in memory."""

from __future__ import annotations

import contextlib
import tempfile
import tracemalloc
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.memory_settings import MIB
from streamjoin.runtime.joins import pending as pending_module
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


def _open(path: Path, *, index_bytes: int | None = None, total: int = 256 * MIB) -> KeyValueStore:
    """`index_bytes`: the pending non-matches' part of the budget, if not the default."""
    store = KeyValueStore(_SPEC, path, MemoryBudget(total))
    if index_bytes is not None:
        store.memory.pending.max_bytes = index_bytes
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
_commits = st.tuples(st.just("commit"))
_steps = st.lists(st.one_of(_adds, _discards, _pops, _commits), max_size=30)
_index_budgets = st.sampled_from([None, 0, 400, 1_000, 3_000])
"""The index's part of the budget: the default (everything fits), nothing at all, or room for
about one, two or six entries."""

Popped = list[tuple[int, Side, bytes, bytes]]


class _Index:
    """An index over its own store, driven as the join drives it: a match discards every record
    the other side's window store holds under that (timestamp, key), each by its offset."""

    def __init__(self, path: Path, index_bytes: int | None) -> None:
        self.store = _open(path, index_bytes=index_bytes)
        self.pending = PendingNonMatches(self.store)
        self._offsets: defaultdict[tuple[int, Side, bytes], set[int]] = defaultdict(set)

    def apply(self, step: tuple[Any, ...]) -> Popped | None:
        """What a pop returned, None for the other steps."""
        match step:
            case ("add", timestamp, side, key, offset):
                self._offsets[timestamp, side, key].add(offset)
                self.pending.add(timestamp, side, key, offset, b"%d" % offset)
            case ("discard", timestamp, side, key):
                for offset in sorted(self._offsets[timestamp, side, key]):
                    self.pending.discard(timestamp, side, key, offset)
            case ("pop", side, timestamp):
                return [(t, s, k, v) for t, s, k, v, _ in self.pending.pop_until(side, timestamp)]
            case ("commit",):
                self.store.begin_flush()
                self.store.finish_flush()
        return None


def _due(pending: PendingNonMatches) -> list[Popped]:
    return [
        [(t, s, key, stored) for t, s, key, stored, _ in pending.pop_until(side, 1 << 62)]
        for side in (Side.LEFT, Side.RIGHT)
    ]


_reloads = st.tuples(st.sampled_from([1, 2, 256]), st.sampled_from([1, 2, 1_000]))
"""How many entries a reload brings back at least, whatever the budget, and the timestamps a
side's first reload reads."""


@contextlib.contextmanager
def _reloading(reload: tuple[int, int]) -> Iterator[None]:
    least, span = reload
    with (
        mock.patch.object(pending_module, "_RELOAD_LEAST_ENTRIES", least),
        mock.patch.object(pending_module, "_FIRST_SPAN_MS", span),
    ):
        yield


@settings(max_examples=200, deadline=None)
@given(_steps, _index_budgets, _reloads)
def test_an_index_loaded_from_its_store_answers_as_the_index_that_wrote_it(
    steps: list[tuple[Any, ...]], index_bytes: int | None, reload: tuple[int, int]
) -> None:
    with tempfile.TemporaryDirectory() as scratch, _reloading(reload):
        path = Path(scratch) / "pending"
        live = _Index(path, index_bytes)
        for step in steps:
            live.apply(step)
        live.apply(("commit",))
        expected = _due(live.pending)  # its deletions stay unflushed: closing drops them
        live.store.close()
        reopened = _open(path, index_bytes=index_bytes)
        try:
            assert _due(PendingNonMatches(reopened)) == expected
        finally:
            reopened.close()


@settings(max_examples=300, deadline=None)
@given(_steps, _index_budgets, _reloads)
def test_an_index_held_to_a_small_budget_answers_as_one_that_holds_everything(
    steps: list[tuple[Any, ...]], index_bytes: int | None, reload: tuple[int, int]
) -> None:
    with tempfile.TemporaryDirectory() as scratch, _reloading(reload):
        whole = _Index(Path(scratch) / "whole", None)
        held = _Index(Path(scratch) / "held", index_bytes)
        try:
            for step in steps:
                assert held.apply(step) == whole.apply(step), step
            assert _due(held.pending) == _due(whole.pending)
        finally:
            whole.store.close()
            held.store.close()


def test_an_index_takes_no_more_memory_than_its_part_of_the_budget() -> None:
    """60,000 pending impressions of the ads join's size: about 50 MB held whole in memory."""
    with tempfile.TemporaryDirectory() as scratch:
        store = _open(Path(scratch) / "pending", total=64 * MIB)
        share = store.memory.pending.max_bytes
        pending = PendingNonMatches(store)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for n in range(60_000):
                value = b"%036d" % n + b"x" * 150
                pending.add(n, Side.LEFT, b"%036d" % (n % 5_000), n, value, memo=(n, value))
                if n % 2_000 == 1_999:  # a commit
                    store.begin_flush()
                    store.finish_flush()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        due = pending.pop_until(Side.LEFT, 1 << 62)
        store.close()
    assert held < share + MIB, f"the index took {held:,} bytes, its part is {share:,}"
    assert [stored[:36] for _, _, _, stored, _ in due] == [b"%036d" % n for n in range(60_000)]


def test_a_replayed_record_is_due_in_offset_order_after_its_later_neighbour() -> None:
    """A replay adds a lower offset after a higher one under the same (timestamp, side, key)."""
    with tempfile.TemporaryDirectory() as scratch:
        pending = PendingNonMatches(_open(Path(scratch) / "pending"))
        pending.add(3, Side.LEFT, b"k", 1, b"second")
        pending.add(3, Side.LEFT, b"k", 0, b"first")
        pending.add(3, Side.LEFT, b"k", 1, b"second")  # replayed again: still one entry
        due = [stored for _, _, _, stored, _ in pending.pop_until(Side.LEFT, 4)]
        assert due == [b"first", b"second"]


def test_an_index_gives_its_memory_back_when_its_store_closes_or_a_new_run_replaces_it() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = _open(Path(scratch) / "pending")
        budget = store.memory.pending
        PendingNonMatches(store).add(1, Side.LEFT, b"k", 0, b"v")
        charged = budget.used_bytes
        assert charged > 0
        PendingNonMatches(store)  # the task runs again over the same store: one entry, held once
        assert budget.used_bytes == charged
        store.close()
        assert budget.used_bytes == 0
