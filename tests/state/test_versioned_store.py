"""Versioned store on real RocksDB: each key's values with the time they became valid, looked up
as of a time, out-of-order writes in their place, history kept relative to the latest write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.table_values import pack_table_value
from streamjoin.state.stores.versioned_store import VersionedStore

MEMORY = MemoryBudget()
HISTORY = 100


def open_store(path: Path, writer: Any = None) -> VersionedStore:
    store = VersionedStore(
        StoreSpec.versioned("prices", history_ms=HISTORY, source_topic="prices"), path, MEMORY
    )
    if writer is not None:
        store.attach_writer(writer)
    return store


@pytest.fixture
def store(tmp_path: Path, recording_writer: Callable[[], Any]) -> VersionedStore:
    return open_store(tmp_path / "v", recording_writer())


def test_a_lookup_finds_the_value_valid_at_its_time(store: VersionedStore) -> None:
    store.put(b"k", 10, b"a")
    store.put(b"k", 20, b"b")
    store.put(b"k", 30, None)  # deleted from 30 on
    assert [store.get_as_of(b"k", t) for t in (9, 10, 19, 20, 29, 30, 99)] == [
        None, b"a", b"a", b"b", b"b", None, None,
    ]  # fmt: skip
    assert store.get_as_of(b"other", 20) is None


def test_an_out_of_order_write_within_the_history_takes_its_place(store: VersionedStore) -> None:
    store.put(b"k", 10, b"a")
    store.put(b"k", 50, b"c")
    store.put(b"k", 30, b"b")  # arrives late
    assert [store.get_as_of(b"k", t) for t in (20, 30, 49, 50)] == [b"a", b"b", b"b", b"c"]


def test_history_is_relative_to_the_latest_write(store: VersionedStore) -> None:
    store.put(b"k", 10, b"a")
    store.put(b"k", 500, b"b")  # observed time 500: history back to 400
    assert store.too_old(399) and not store.too_old(400)
    assert not store.put(b"k", 399, b"late")  # older than the history: dropped
    assert store.put(b"k", 400, b"edge")
    # the version valid at the cutoff stays; versions that ended before it are gone
    assert store.versions(b"k") == [(400, b"edge"), (500, b"b")]


def test_the_version_valid_at_the_cutoff_is_kept(store: VersionedStore) -> None:
    store.put(b"k", 10, b"a")
    store.put(b"j", 1_000, b"x")  # moves observed time to 1000: history back to 900
    store.put(b"k", 1_000, b"b")
    assert store.versions(b"k") == [(10, b"a"), (1_000, b"b")]  # a is valid at 900
    assert store.get_as_of(b"k", 950) == b"a"
    store.put(b"k", 1_200, b"c")  # history back to 1100: a ended before it
    assert store.versions(b"k") == [(1_000, b"b"), (1_200, b"c")]
    store.put(b"m", 5, b"old")
    assert store.get_as_of(b"m", 950) is None  # m's write was older than the history


def test_restore_from_the_source_topic_reproduces_the_writes(
    tmp_path: Path, make_record: Callable[..., Any]
) -> None:
    store = open_store(tmp_path / "r")
    store.restore(
        [
            make_record(0, b"k", b"a", 10),
            make_record(1, b"k", b"c", 50),
            make_record(2, None, b"keyless", 55),
            make_record(3, b"k", b"b", 30),
            make_record(4, b"k", None, 60),
        ]
    )
    assert [store.get_as_of(b"k", t) for t in (10, 30, 50, 60)] == [
        pack_table_value(0, 10, b"a"),
        pack_table_value(3, 30, b"b"),
        pack_table_value(1, 50, b"c"),
        None,
    ]
    assert store.restored_end == 5
    store.close()
    reopened = open_store(tmp_path / "r")
    assert reopened.observed_time == 60  # kept across a reopen
    assert reopened.get_as_of(b"k", 31) == pack_table_value(3, 30, b"b")


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 300), st.one_of(st.none(), st.binary(min_size=1, max_size=3))),
        max_size=25,
    ),
    probes=st.lists(st.integers(0, 300), max_size=10),
)
def test_lookups_equal_a_model_of_the_kept_history(
    tmp_path_factory: pytest.TempPathFactory,
    recording_writer: Callable[[], Any],
    writes: list[tuple[int, bytes | None]],
    probes: list[int],
) -> None:
    store = open_store(tmp_path_factory.mktemp("v"), recording_writer())
    kept: dict[int, bytes | None] = {}
    observed = None
    for t, value in writes:
        now = t if observed is None else max(observed, t)
        stored = store.put(b"k", t, value)
        assert stored == (t >= now - HISTORY)
        if stored:
            kept[t] = value
        observed = now
    for probe in probes:
        if store.too_old(probe):
            assert observed is not None and probe < observed - HISTORY
            continue
        valid = [t for t in kept if t <= probe]
        assert store.get_as_of(b"k", probe) == (kept[max(valid)] if valid else None)
    store.close()
