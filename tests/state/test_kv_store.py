"""Key-value store on real RocksDB: unconfirmed writes stay in memory until a flush, reads see
them first, and a restore from the changelog reproduces what the writes produced."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamjoin.errors import ProtocolDecodeError
from streamjoin.state.errors import StoreNotWritableError
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreSpec
from streamjoin.state.stores.kv_store import KeyValueStore, merge_overlay

MEMORY = MemoryBudget()


@pytest.fixture
def store(tmp_path: Path) -> KeyValueStore:
    return KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)


def test_writes_need_a_writer(store: KeyValueStore) -> None:
    with pytest.raises(StoreNotWritableError, match="read-only"):
        store.put(b"k", b"v")


def test_a_flush_sends_each_keys_last_write_and_writes_stay_pending_until_it_ends(
    store: KeyValueStore, recording_writer: Callable[[], Any], tmp_path: Path
) -> None:
    writer = recording_writer()
    store.attach_writer(writer)
    store.put(b"a", b"1", timestamp=5)
    store.put(b"b", b"2")
    store.put(b"b", b"3", timestamp=7)
    store.delete(b"a")
    assert writer.records == []
    assert (store.get(b"a"), store.get(b"b")) == (None, b"3")
    assert store.pending_count == 2
    store.begin_flush()
    # b's last write only; a was created and deleted in between: nothing to tell the changelog
    assert writer.records == [(b"b", b"3", 7)]
    store.put(b"c", b"3")  # arrives while the flush waits for the broker
    assert store.get(b"b") == b"3"
    store.finish_flush()
    assert store.pending_count == 1
    store.delete(b"b", timestamp=9)  # b is in RocksDB now: its deletion must be logged
    store.begin_flush()
    assert writer.records[1:] == [(b"c", b"3", None), (b"b", None, 9)]
    store.finish_flush()
    store.close()
    reopened = KeyValueStore(StoreSpec.kv("kv"), tmp_path / "kv", MEMORY)
    assert (reopened.get(b"a"), reopened.get(b"b"), reopened.get(b"c")) == (None, None, b"3")


def test_discard_pending_forgets_unconfirmed_writes(
    store: KeyValueStore, recording_writer: Callable[[], Any]
) -> None:
    store.attach_writer(recording_writer())
    store.put(b"a", b"1")
    store.begin_flush()
    store.put(b"b", b"2")
    store.discard_pending()
    assert store.get(b"a") is None
    assert store.get(b"b") is None


def test_restore_applies_values_and_tombstones(
    store: KeyValueStore, make_record: Callable[..., Any]
) -> None:
    store.restore(
        [make_record(0, b"a", b"1"), make_record(1, b"b", b"2"), make_record(2, b"a", None)]
    )
    assert (store.get(b"a"), store.get(b"b")) == (None, b"2")


def test_restore_refuses_a_record_without_key(
    store: KeyValueStore, make_record: Callable[..., Any]
) -> None:
    with pytest.raises(ProtocolDecodeError, match="offset 7"):
        store.restore([make_record(7, None, b"1")])


def test_wipe_empties_the_store(store: KeyValueStore, make_record: Callable[..., Any]) -> None:
    store.restore([make_record(0, b"a", b"1")])
    store.wipe()
    assert store.get(b"a") is None
    assert list(store.range()) == []


def test_merge_overlay() -> None:
    base = [(b"a", b"1"), (b"c", b"3"), (b"e", b"5")]
    overlay = [(b"b", b"2"), (b"c", None), (b"e", b"6"), (b"f", b"7")]
    assert list(merge_overlay(base, overlay)) == [
        (b"a", b"1"),
        (b"b", b"2"),
        (b"e", b"6"),
        (b"f", b"7"),
    ]


operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.binary(max_size=3), st.binary(max_size=3)),
        st.tuples(st.just("delete"), st.binary(max_size=3), st.just(b"")),
        st.tuples(st.just("begin"), st.just(b""), st.just(b"")),
        st.tuples(st.just("finish"), st.just(b""), st.just(b"")),
    ),
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations, st.binary(max_size=2), st.binary(max_size=3))
def test_reads_match_a_dict_model(
    tmp_path_factory: pytest.TempPathFactory,
    recording_writer: Callable[[], Any],
    ops: list[tuple[str, bytes, bytes]],
    start: bytes,
    end: bytes,
) -> None:
    store = KeyValueStore(StoreSpec.kv("kv"), tmp_path_factory.mktemp("kv") / "kv", MEMORY)
    writer = recording_writer()
    store.attach_writer(writer)
    model: dict[bytes, bytes] = {}
    flushing = False
    for op, key, value in ops:
        if op == "put":
            store.put(key, value)
            model[key] = value
        elif op == "delete":
            store.delete(key)
            model.pop(key, None)
        elif op == "begin":
            store.begin_flush()
            flushing = True
        elif flushing:
            store.finish_flush()
            flushing = False
    assert all(store.get(key) == model.get(key) for _, key, _ in ops)
    assert list(store.range()) == sorted(model.items())
    assert list(store.range(start, end)) == sorted(
        (k, v) for k, v in model.items() if start <= k < end
    )
    if flushing:
        store.finish_flush()
    store.begin_flush()
    store.finish_flush()
    # the changelog, though it leaves out overwritten and short-lived writes, rebuilds the model
    restored = KeyValueStore(StoreSpec.kv("kv"), tmp_path_factory.mktemp("kv") / "kv", MEMORY)
    restored.restore(writer.as_changelog())
    assert list(restored.range()) == sorted(model.items())
    assert len(writer.records) <= sum(op in ("put", "delete") for op, _, _ in ops)
    restored.close()
    store.close()


def test_a_table_store_restores_from_its_source_topic_and_logs_nothing(
    tmp_path: Path, recording_writer: Callable[[], Any], make_record: Callable[..., Any]
) -> None:
    from streamjoin.state.stores.table_values import unpack_table_value

    store = KeyValueStore(StoreSpec.kv("t", source_topic="users"), tmp_path / "t", MEMORY)
    store.restore(
        [
            make_record(0, b"a", b"1", 50),
            make_record(1, None, b"keyless"),
            make_record(2, b"b", b"2", 60),
            make_record(3, b"a", None, 70),
        ]
    )
    assert store.get(b"a") is None
    stored = store.get(b"b")
    assert stored is not None and unpack_table_value(stored) == (2, 60, b"2")
    assert store.restored_end == 4
    writer = recording_writer()
    store.attach_writer(writer)
    store.put(b"c", b"3")
    store.source_applied(9)
    store.begin_flush()
    store.source_applied(10)  # processed while the flush waits
    store.finish_flush()
    assert writer.records == []  # the source topic is the changelog
    assert store.get(b"c") == b"3"
    assert store.flushed_position == 10
