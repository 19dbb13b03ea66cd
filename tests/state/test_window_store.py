"""Window store on real RocksDB: time-ordered fetches per key, duplicates kept, retention by
whole segments, and restores that rebuild exactly what the writes produced."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rocksdict import Options, Rdict

from streamjoin.errors import ProtocolDecodeError
from streamjoin.memory_settings import MIN_ROCKSDB_BYTES
from streamjoin.state.memory import STORE_OVERHEAD_BYTES, MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.encoding import NO_TIME, split_changelog_key, window_changelog_key
from streamjoin.state.stores.window_store import WindowStore

SPEC = StoreSpec.window("win", retention_ms=100, segment_interval_ms=10)
MEMORY = MemoryBudget()


def open_store(path: Path, writer: Any = None) -> WindowStore:
    store = WindowStore(SPEC, path, MEMORY)
    store.attach_writer(writer)
    return store


def disk_timestamps(path: Path) -> list[int]:
    """Timestamps of every record physically in the database (the store must be closed)."""
    options = Options(raw_mode=True)
    db = Rdict(str(path), options, column_families={"default": options})
    try:
        keys = [key for key in db.keys() if key]  # noqa: SIM118 - the empty key is metadata
        return sorted(int.from_bytes(key[-12:-4], "big") - (1 << 63) for key in keys)
    finally:
        db.close()


def test_fetch_returns_one_keys_records_in_time_order_with_duplicates(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    store = open_store(tmp_path / "w", recording_writer())
    for key, ts, value in [
        (b"ab", 30, b"3"),
        (b"ab", 10, b"1"),
        (b"abc", 20, b"x"),
        (b"a", 20, b"y"),
        (b"ab", 20, b"2a"),
        (b"ab", 20, b"2b"),
        (b"", 20, b"empty"),
    ]:
        assert store.put(key, ts, value)
    expected = [(10, b"1"), (20, b"2a"), (20, b"2b"), (30, b"3")]
    assert store.fetch(b"ab", 0, 100) == expected
    store.begin_flush()
    store.finish_flush()
    assert store.fetch(b"ab", 0, 100) == expected
    assert store.fetch(b"ab", 15, 20) == [(20, b"2a"), (20, b"2b")]
    assert store.fetch(b"", 0, 100) == [(20, b"empty")]
    assert store.fetch(b"zz", 0, 100) == []


def test_fetch_merges_flushed_and_pending_records(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    store = open_store(tmp_path / "w", recording_writer())
    store.put(b"k", 15, b"old")
    store.begin_flush()
    store.finish_flush()
    store.put(b"k", 5, b"pending-early")
    store.put(b"k", 15, b"pending-same")
    store.begin_flush()
    store.put(b"k", 25, b"newest")
    assert store.fetch(b"k", 0, 30) == [
        (5, b"pending-early"),
        (15, b"old"),
        (15, b"pending-same"),
        (25, b"newest"),
    ]


def test_discarded_writes_are_gone_from_memory_too(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    """A failed changelog delivery discards unconfirmed writes; fetches must not see them."""
    store = open_store(tmp_path / "w", recording_writer())
    store.put(b"k", 10, b"confirmed", memo="m")
    store.begin_flush()
    store.finish_flush()
    store.put(b"k", 20, b"unconfirmed", memo="m")
    store.discard_pending()
    assert store.fetch_with_memos(b"k", 0, 30) == [(10, b"confirmed", None)]
    store.put(b"k", 25, b"after", memo="m")
    assert store.fetch_with_memos(b"k", 0, 30) == [(10, b"confirmed", None), (25, b"after", "m")]


def test_retention_drops_old_segments_and_keeps_new(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    store = open_store(tmp_path / "w", recording_writer())
    for ts in range(0, 300, 5):
        assert store.put(b"k", ts, b"%d" % ts)
    # stream time 295, retention 100: timestamps <= 195 are expired
    assert store.fetch(b"k", 0, 1000)[0] == (200, b"200")
    assert not store.put(b"k", 150, b"late")
    assert store.dropped_expired == 1
    assert store.put(b"k", 196, b"just in time")
    store.begin_flush()
    store.finish_flush()
    store.close()
    on_disk = disk_timestamps(tmp_path / "w")
    assert min(on_disk) >= 190  # segment 19 (190..199) still holds live records
    assert on_disk[-1] == 295
    assert [ts for ts in on_disk if ts >= 196] == [196, *range(200, 300, 5)]


def test_restore_rebuilds_what_the_writes_produced(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    writer = recording_writer()
    original = open_store(tmp_path / "a", writer)
    started = int(time.time() * 1000)
    for i in range(60):
        original.put(b"k%d" % (i % 3), i * 7, b"v%d" % i)
        if i in (29, 59):
            original.begin_flush()
            original.finish_flush()
    # each flush logs only what is live then (timestamps above 203 - 100, then 413 - 100)
    times = [split_changelog_key(key)[1] for key, _, _ in writer.records]
    assert sorted(times) == [*range(15 * 7, 30 * 7, 7), *range(45 * 7, 60 * 7, 7)]
    assert times[14] == 29 * 7 and times[-1] == 59 * 7  # each flush's newest put comes last
    # Records are stamped when logged, so the broker's retention counts from then.
    assert all(started <= stamp <= time.time() * 1000 for _, _, stamp in writer.records)
    restored = open_store(tmp_path / "b")
    changelog = writer.as_changelog()
    restored.restore(changelog[:20])
    restored.restore(changelog[20:])
    assert restored.stream_time == original.stream_time
    for key in (b"k0", b"k1", b"k2"):
        assert restored.fetch(key, 0, 1000) == original.fetch(key, 0, 1000)
    restored.attach_writer(recording_writer())
    restored.put(b"k0", 413, b"after")  # its sequence continues after the restored ones
    assert restored.fetch(b"k0", 413, 413) == [(413, b"after")]


def test_a_restored_store_continues_after_the_newest_sequence_number(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    """A flush logs key by key; the newest put still comes last, because a restore takes the
    next sequence number from the last record and must not overwrite a duplicate with it."""
    writer = recording_writer()
    original = open_store(tmp_path / "a", writer)
    for key in (b"a", b"b", b"a"):
        original.put(key, 100, key + b"@100")
    original.begin_flush()
    restored = open_store(tmp_path / "b", recording_writer())
    restored.restore(writer.as_changelog())
    restored.put(b"a", 100, b"new")
    restored.begin_flush()
    restored.finish_flush()
    assert restored.fetch(b"a", 100, 100) == [(100, b"a@100"), (100, b"a@100"), (100, b"new")]


def test_sequence_survives_reopen_so_duplicates_stay_apart(
    tmp_path: Path, recording_writer: Callable[[], Any]
) -> None:
    store = open_store(tmp_path / "w", recording_writer())
    store.put(b"k", 50, b"first")
    store.begin_flush()
    store.finish_flush()
    store.close()
    reopened = open_store(tmp_path / "w", recording_writer())
    assert reopened.stream_time == 50
    reopened.put(b"k", 50, b"second")
    reopened.begin_flush()
    reopened.finish_flush()
    assert reopened.fetch(b"k", 50, 50) == [(50, b"first"), (50, b"second")]


def test_empty_store_has_no_stream_time(tmp_path: Path) -> None:
    store = open_store(tmp_path / "w")
    assert store.stream_time == NO_TIME
    assert store.fetch(b"k", -(10**12), 10**12) == []


def test_restore_refuses_a_key_without_suffix(
    tmp_path: Path, make_record: Callable[..., Any]
) -> None:
    store = open_store(tmp_path / "w")
    with pytest.raises(ProtocolDecodeError, match="offset 3"):
        store.restore([make_record(3, b"short", b"v")])
    with pytest.raises(ProtocolDecodeError, match="offset 4"):
        store.restore([make_record(4, None, b"v")])


puts = st.lists(
    st.tuples(
        st.sampled_from([b"a", b"b", b"ab"]),
        st.integers(0, 400),
        st.sampled_from(["put", "flush", "reopen"]),
    ),
    max_size=60,
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(puts, st.integers(-50, 450), st.integers(0, 120), st.sampled_from([0, 700, 1 << 20]))
def test_fetch_matches_a_list_model(
    tmp_path_factory: pytest.TempPathFactory,
    recording_writer: Callable[[], Any],
    records: list[tuple[bytes, int, str]],
    t_from: int,
    width: int,
    recent_bytes: int,
) -> None:
    """Whatever part the newest records in memory answer (all, some or none: a budget of 0,
    of about three records, or ample; reopening empties them), fetches equal the model's, and a
    record's memo comes back exactly while it is in memory."""
    spec = StoreSpec.window("win", retention_ms=100, segment_interval_ms=10)
    recent_share = STORE_OVERHEAD_BYTES + recent_bytes  # the open store takes its overhead
    memory = MemoryBudget(2 * MIN_ROCKSDB_BYTES + recent_share, recent_bytes=recent_share)
    path = tmp_path_factory.mktemp("w") / "w"
    store = WindowStore(spec, path, memory)
    store.attach_writer(recording_writer())
    model: list[tuple[bytes, int, bytes]] = []
    stream_time = NO_TIME
    for i, (key, ts, then) in enumerate(records):
        stream_time = max(stream_time, ts)
        stored = store.put(key, ts, b"%d" % i, memo=("memo", i))
        assert stored == (ts > stream_time - 100)
        if stored:
            model.append((key, ts, b"%d" % i))
        if then != "put":
            store.begin_flush()
            store.finish_flush()
        if then == "reopen":
            store.close()
            store = WindowStore(spec, path, memory)
            store.attach_writer(recording_writer())
    for key in (b"a", b"b", b"ab"):
        expected = sorted(
            (
                (ts, v)
                for k, ts, v in model
                if k == key and t_from <= ts <= t_from + width and ts > stream_time - 100
            ),
            key=lambda item: item[0],
        )
        assert store.fetch(key, t_from, t_from + width) == expected
        with_memos = store.fetch_with_memos(key, t_from, t_from + width)
        assert [(ts, v) for ts, v, _ in with_memos] == expected
        ample = recent_bytes == 1 << 20 and all(then != "reopen" for _, _, then in records)
        for ts, value, memo in with_memos:
            assert memo in (None, ("memo", int(value)))
            if memo is None:
                assert not ample  # then every live record is answered from memory
                assert ts <= store.recent.floor
    assert store.recent.size_bytes == memory.recent.used_bytes <= recent_bytes
    store.close()
    assert memory.recent.used_bytes == 0  # closing gives the share back


@pytest.mark.parametrize("segments", [1, 40])
def test_restore_in_one_segment_matches_the_record_by_record_path(
    tmp_path: Path, recording_writer: Callable[[], Any], segments: int
) -> None:
    """A batch within one segment takes the quick path, one across segments the record by record
    one; both rebuild what was written, reading the times from the keys."""
    spec = StoreSpec.window("win", retention_ms=1_000, segment_interval_ms=400 // segments)
    writer = recording_writer()
    original = WindowStore(spec, tmp_path / "a", MEMORY)
    original.attach_writer(writer)
    for i in range(100):
        original.put(
            b"k%d" % (i % 4), 800 + (i * 37) % 400, b"v%d" % i
        )  # out of order, in 400 ms of event time
    original.begin_flush()
    changelog = writer.as_changelog()
    restored = WindowStore(spec, tmp_path / "b", MEMORY)
    restored.restore(changelog)
    assert restored.stream_time == original.stream_time
    for key in (b"k0", b"k1", b"k2", b"k3"):
        assert restored.fetch(key, 0, 10_000) == original.fetch(key, 0, 10_000)


def test_a_restored_batch_in_one_expired_segment_stores_nothing_of_it(
    tmp_path: Path, make_record: Callable[..., Any]
) -> None:
    """The quick path fills the batch while it checks the keys; a batch whose segment turns
    out expired must leave none of those writes behind."""
    spec = StoreSpec.window("win", retention_ms=1_000, segment_interval_ms=500)
    store = WindowStore(spec, tmp_path / "s", MEMORY)
    store.restore([make_record(0, window_changelog_key(b"new", 10_000, 0), b"n")])
    old = [make_record(1 + i, window_changelog_key(b"old", 100 + i, 1 + i), b"o") for i in range(5)]
    store.restore(old)
    assert store.fetch(b"new", 0, 20_000) == [(10_000, b"n")]
    assert store.stream_time == 10_000
    store.close()
    assert disk_timestamps(tmp_path / "s") == [10_000]
