"""Stream-global-table joins: each stream record looks up the global table by the key its
`key=` gives; the output keeps the stream record's key and partition."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.dsl.spec import JoinKind
from streamjoin.dsl.topology import compile_topology
from streamjoin.errors import ConfigurationError
from streamjoin.runtime.joins.global_table import GlobalTableJoin
from streamjoin.runtime.joins.records import Side, SourceRecord
from streamjoin.runtime.tasks.output_writer import parse_source
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.stores.global_store import GlobalStore, unpack_global
from streamjoin.testing import TestDriver


@dataclass(frozen=True, slots=True)
class Country:
    name: str
    continent: str


@dataclass(frozen=True, slots=True)
class Visit:
    user: str
    country: str


def make_app(how: JoinKind, key: Any = None) -> App:
    app = App("geo")
    visits = app.topic("visits", value_type=Visit, partitions=4)
    countries = app.global_table("countries", value_type=Country, partitions=3)

    @app.join(
        visits, countries, key=key or (lambda visit: visit.country), how=how, into="visits-geo"
    )
    def locate(visit: Visit, country: Country | None) -> dict[str, Any]:
        return {"user": visit.user, "continent": country.continent if country else None}

    return app


@pytest.fixture(params=["inner", "left"])
def driver(request: pytest.FixtureRequest) -> Iterator[TestDriver]:
    with TestDriver(make_app(request.param)) as running:
        yield running


def test_a_stream_record_joins_the_value_its_key_function_names(driver: TestDriver) -> None:
    driver.pipe("countries", Country("Netherlands", "Europe"), key="NL", timestamp=1)
    driver.pipe("visits", Visit("ann", "NL"), key="ann", timestamp=10)
    [out] = driver.read_output("visits-geo")
    assert (out.key, out.value) == ("ann", {"user": "ann", "continent": "Europe"})


def test_the_output_keeps_the_stream_key_and_names_the_table_record_it_used(
    driver: TestDriver,
) -> None:
    driver.pipe("countries", Country("Japan", "Asia"), key="JP", timestamp=1, partition=2)
    driver.pipe("visits", Visit("bob", "JP"), key="bob", timestamp=10, partition=0)
    [out] = driver.read_output("visits-geo")
    assert parse_source(out.headers["streamjoin.right"]) == ("countries", 2, 0)
    assert parse_source(out.headers["streamjoin.left"]) == ("visits", 0, 0)


def test_updates_apply_at_once_and_tombstones_delete() -> None:
    with TestDriver(make_app("left")) as driver:
        driver.pipe("countries", Country("Turkey", "Asia"), key="TR", timestamp=1)
        driver.pipe("visits", Visit("cy", "TR"), key="cy", timestamp=2)
        driver.pipe("countries", Country("Turkey", "Europe"), key="TR", timestamp=3)
        driver.pipe("visits", Visit("cy", "TR"), key="cy", timestamp=4)
        driver.pipe("countries", None, key="TR", timestamp=5)
        driver.pipe("visits", Visit("cy", "TR"), key="cy", timestamp=6)
        assert [r.value["continent"] for r in driver.read_output("visits-geo")] == [
            "Asia",
            "Europe",
            None,
        ]
        assert driver.global_table("countries").lookup(b"TR") is None


def test_no_table_value_inner_drops_and_counts_left_emits_none() -> None:
    for how, expected in (("inner", []), ("left", [{"user": "dan", "continent": None}])):
        with TestDriver(make_app(how)) as driver:
            driver.pipe("visits", Visit("dan", "XX"), key="dan", timestamp=1)
            assert [r.value for r in driver.read_output("visits-geo")] == expected
            counters = driver.counters("locate")
            assert counters.no_match_dropped == (1 if how == "inner" else 0)
            assert counters.unmatched == (0 if how == "inner" else 1)


def test_a_field_name_works_as_key() -> None:
    with TestDriver(make_app("inner", key="country")) as driver:
        driver.pipe("countries", Country("Peru", "America"), key="PE", timestamp=1)
        driver.pipe("visits", Visit("eve", "PE"), key="eve", timestamp=2)
        assert [r.value["continent"] for r in driver.read_output("visits-geo")] == ["America"]


def test_keyless_stream_records_and_failing_key_functions_are_dead_letters() -> None:
    def broken(visit: Visit) -> str:
        raise RuntimeError("no country here")

    for app, key in ((make_app("left"), None), (make_app("left", key=broken), b"fay")):
        with TestDriver(app) as driver:
            driver.pipe("visits", Visit("fay", "NL"), key=key and "fay", timestamp=1)
            assert driver.read_output("visits-geo") == []
            [dead] = driver.dead_letters()
            headers = dict(dead.headers)
            assert headers["streamjoin.source.topic"] == b"visits"
            reason = headers["streamjoin.error.message"].decode()
            assert ("no key" in reason) if key is None else ("no country here" in reason)


def test_a_table_value_that_does_not_decode_makes_the_stream_record_a_dead_letter() -> None:
    with TestDriver(make_app("left")) as driver:
        driver.pipe_raw("countries", b"not json", key=b"NL", timestamp=1, partition=0)
        driver.pipe("visits", Visit("gus", "NL"), key="gus", timestamp=2)
        [dead] = driver.dead_letters()
        assert b"countries[0]@0 does not decode" in dict(dead.headers)["streamjoin.error.message"]


def test_no_co_partitioning_is_required() -> None:
    """Visits have 4 partitions, countries 3: each visit finds its country wherever it is."""
    with TestDriver(make_app("inner")) as driver:
        for p in range(3):
            driver.pipe("countries", Country(f"c{p}", "x"), key=f"K{p}", timestamp=1, partition=p)
        for n in range(12):
            driver.pipe("visits", Visit("u", f"K{n % 3}"), key=f"u{n}", timestamp=2)
        outputs = driver.read_output("visits-geo")
        assert sorted(r.key for r in outputs) == sorted(f"u{n}" for n in range(12))


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        ("no_key", "needs key="),
        ("window", "takes no window"),
        ("outer", "inner or left, not outer"),
        ("global_left", "can only be the right side"),
        ("key_elsewhere", "key= applies only to a join with a global table"),
        ("bad_key", "key= takes a function of the stream value or a field name"),
        ("table_left", "joins a stream (app.topic), not table 'users'"),
    ],
)
def test_misuse_is_one_clear_line(declare: str, message: str) -> None:
    app = App("misuse")
    visits, countries = app.topic("visits"), app.global_table("countries")
    other = app.topic("other")
    arguments: dict[str, Any] = {
        "no_key": {"left": visits, "right": countries},
        "window": {"left": visits, "right": countries, "key": "c", "window": JoinWindows.of(1)},
        "outer": {"left": visits, "right": countries, "key": "c", "how": "outer"},
        "global_left": {"left": countries, "right": visits, "key": "c"},
        "key_elsewhere": {"left": visits, "right": other, "key": "c", "window": JoinWindows.of(1)},
        "bad_key": {"left": visits, "right": countries, "key": 42},
        "table_left": {"left": app.table("users"), "right": countries, "key": "c"},
    }[declare]
    with pytest.raises(ConfigurationError) as caught:
        app.join(into="out", name="j", **arguments)(lambda a, b: a)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_processor_on_a_store(tmp_path: Path) -> None:
    """The processor alone, on a GlobalStore filled as the worker's feed fills it."""

    @dataclass
    class Record:
        partition: int
        offset: int
        key: bytes | None
        value: bytes | None

    app = make_app("left")
    store = GlobalStore("countries", StateDirectory(tmp_path, "geo"), MemoryBudget())
    try:
        store.apply(
            1,
            [Record(1, 5, b"NL", b'{"name":"NL","continent":"Europe"}'), Record(1, 6, None, b"{}")],
        )
        assert store.positions == {1: 7}
        stored = store.lookup(b"NL")
        assert stored is not None and unpack_global(stored)[:2] == (1, 5)
        join = GlobalTableJoin(app.joins[0], store)
        visit = b'{"user":"hal","country":"NL"}'
        [out] = join.process(SourceRecord(Side.LEFT, b"hal", visit, 10, 3))
        assert out.key == b"hal" and out.right is not None
        assert (out.right.value, out.right.partition, out.right.offset) == (
            Country("NL", "Europe"),
            1,
            5,
        )
        [none] = join.process(
            SourceRecord(Side.LEFT, b"hal", b'{"user":"h","country":"XX"}', 11, 4)
        )
        assert none.right is None and join.counters.unmatched == 1
        assert join.process(SourceRecord(Side.LEFT, b"hal", None, 12, 5)) == []
        assert join.counters.skipped == 1
    finally:
        store.close()


def test_the_store_resumes_from_its_checkpoint_and_wipes_data_without_one(
    tmp_path: Path,
) -> None:
    @dataclass
    class Record:
        partition: int
        offset: int
        key: bytes | None
        value: bytes | None

    directory, memory = StateDirectory(tmp_path, "geo"), MemoryBudget()
    store = GlobalStore("countries", directory, memory)
    store.apply(0, [Record(0, 0, b"a", b"1"), Record(0, 1, b"b", b"2")])
    store.apply(2, [Record(2, 0, b"c", b"3")])
    store.checkpoint()
    store.apply(0, [Record(0, 2, b"d", b"4")])  # not checkpointed
    store.close()
    again = GlobalStore("countries", directory, memory)
    assert again.positions == {0: 2, 2: 1}
    again.close()
    again.checkpoint_path.unlink()
    fresh = GlobalStore("countries", directory, memory)
    assert fresh.positions == {} and fresh.is_empty()
    fresh.close()


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("table"),
            st.sampled_from("ABC"),
            st.none() | st.sampled_from("xyz"),
            st.integers(0, 2),
        ),
        st.tuples(
            st.just("visit"),
            st.sampled_from("ABCD"),
            st.sampled_from(["u1", "u2"]),
            st.integers(0, 3),
        ),
    ),
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(operations)
def test_each_visit_joins_the_table_value_current_when_it_is_processed(
    ops: list[tuple[str, str, str | None, int]],
) -> None:
    """A model: a dict of the latest value per key, whatever partition an update went to."""
    with TestDriver(make_app("left")) as driver:
        table: dict[str, str] = {}
        expected = []
        for t, (kind, key, value, partition) in enumerate(ops, 1):
            if kind == "table":
                country = None if value is None else Country(key, value)
                driver.pipe("countries", country, key=key, timestamp=t, partition=partition)
                if value is None:
                    table.pop(key, None)
                else:
                    table[key] = value
            else:
                assert value is not None
                driver.pipe(
                    "visits", Visit(value, key), key=value, timestamp=t, partition=partition
                )
                expected.append((value, table.get(key)))
        got = [(r.key, r.value["continent"]) for r in driver.read_output("visits-geo")]
        assert got == expected


def test_a_missing_global_topic_is_named_with_the_command_that_creates_it() -> None:
    app = App("geo")
    app.join(app.topic("visits"), app.global_table("countries"), key="c", into="o", name="g")(max)
    with pytest.raises(ConfigurationError) as caught:
        compile_topology(app, {"visits": 4})
    assert str(caught.value) == (
        "join 'g': input topic 'countries' does not exist; create it with `streamjoin topics "
        "create countries --partitions N` (any partition count: every worker reads a global "
        "table whole), or start the worker with --create-topics"
    )
    assert compile_topology(app, {"visits": 4, "countries": 7}).tasks == {"g": 4}
