"""Table-table joins (Kafka Streams' KTable-KTable): an update on either side emits the new
result for its key; where there is none, a tombstone if a result existed or the other side has
a value (as Kafka Streams), nothing otherwise; the output timestamp is the larger of the two
sides'."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from streamjoin import App
from streamjoin.dsl.spec import JoinKind
from streamjoin.errors import ConfigurationError
from streamjoin.testing import TestDriver


def make(how: JoinKind) -> TestDriver:
    app = App("accounts")
    users, accounts = app.table("users"), app.table("accounts")

    @app.join(users, accounts, how=how, into="user-accounts")
    def user_account(user: dict[str, Any] | None, account: dict[str, Any] | None) -> Any:
        return {"user": user and user["name"], "account": account and account["iban"]}

    return TestDriver(app)


def outputs(driver: TestDriver) -> list[tuple[str, Any, int]]:
    return [(r.key, r.value, r.timestamp) for r in driver.read_output("user-accounts")]


def both(user: str | None, account: str | None) -> dict[str, str | None]:
    return {"user": user, "account": account}


@pytest.fixture(params=["inner", "left", "outer"])
def how(request: pytest.FixtureRequest) -> JoinKind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def driver(how: JoinKind) -> Iterator[TestDriver]:
    with make(how) as running:
        yield running


def test_an_update_on_either_side_emits_the_new_result_at_the_later_timestamp(
    driver: TestDriver,
) -> None:
    driver.pipe("users", {"name": "ann"}, key="k", timestamp=10)
    driver.pipe("accounts", {"iban": "NL1"}, key="k", timestamp=5)
    driver.pipe("users", {"name": "anne"}, key="k", timestamp=7)
    driver.pipe("accounts", {"iban": "NL2"}, key="k", timestamp=20)
    got = outputs(driver)
    assert got[-3:] == [
        ("k", both("ann", "NL1"), 10),
        ("k", both("anne", "NL1"), 7),
        ("k", both("anne", "NL2"), 20),
    ]


def test_a_side_alone_emits_by_kind(driver: TestDriver, how: JoinKind) -> None:
    driver.pipe("users", {"name": "ann"}, key="u", timestamp=1)
    driver.pipe("accounts", {"iban": "NL1"}, key="a", timestamp=2)
    expected = {
        "inner": [],
        "left": [("u", both("ann", None), 1)],
        "outer": [("u", both("ann", None), 1), ("a", both(None, "NL1"), 2)],
    }
    assert outputs(driver) == expected[how]


def test_deleting_one_side_of_a_result(driver: TestDriver, how: JoinKind) -> None:
    driver.pipe("users", {"name": "ann"}, key="k", timestamp=1)
    driver.pipe("accounts", {"iban": "NL1"}, key="k", timestamp=2)
    driver.read_output("user-accounts")
    driver.pipe("users", None, key="k", timestamp=3)  # left side goes
    after_left = {"inner": None, "left": None, "outer": both(None, "NL1")}
    assert outputs(driver) == [("k", after_left[how], 3)]
    driver.pipe("accounts", None, key="k", timestamp=4)  # right side goes too
    # inner/left: no result before or after: nothing; outer: its right-only result goes
    assert outputs(driver) == ([("k", None, 4)] if how == "outer" else [])


def test_deleting_the_right_side_keeps_the_left_result_by_kind(
    driver: TestDriver, how: JoinKind
) -> None:
    driver.pipe("users", {"name": "ann"}, key="k", timestamp=1)
    driver.pipe("accounts", {"iban": "NL1"}, key="k", timestamp=2)
    driver.read_output("user-accounts")
    driver.pipe("accounts", None, key="k", timestamp=3)
    expected = None if how == "inner" else both("ann", None)
    assert outputs(driver) == [("k", expected, 3)]


def test_a_delete_without_a_result_before_emits_nothing(driver: TestDriver) -> None:
    driver.pipe("users", None, key="nobody", timestamp=1)
    driver.pipe("accounts", None, key="nobody", timestamp=2)
    assert outputs(driver) == []
    assert driver.counters("user_account").retracted == 0


@pytest.mark.parametrize(
    ("how", "expected"), [("inner", None), ("left", None), ("outer", both(None, "NL1"))]
)
def test_a_delete_where_the_other_side_has_a_value_emits_the_keys_state(
    how: JoinKind, expected: Any
) -> None:
    """No result existed for k (inner, left: no user), yet Kafka Streams 4.4 sends a tombstone:
    the rule for every table join is the same (docs/joins.md)."""
    with make(how) as driver:
        driver.pipe("accounts", {"iban": "NL1"}, key="k", timestamp=5)
        driver.read_output("user-accounts")
        driver.pipe("users", None, key="k", timestamp=6)
        assert outputs(driver) == [("k", expected, 6)]


def test_inner_deletes_of_an_unmatched_side_emit_nothing() -> None:
    with make("inner") as driver:
        driver.pipe("users", {"name": "ann"}, key="k", timestamp=1)
        driver.pipe("users", None, key="k", timestamp=2)
        assert outputs(driver) == []


def test_a_tombstone_for_a_result_is_counted_and_carries_no_source_header() -> None:
    with make("inner") as driver:
        driver.pipe("users", {"name": "ann"}, key="k", timestamp=1)
        driver.pipe("accounts", {"iban": "NL1"}, key="k", timestamp=9)
        driver.read_output("user-accounts")
        driver.pipe("users", None, key="k", timestamp=3)
        (tombstone,) = driver.read_output("user-accounts")
        assert (tombstone.value, tombstone.timestamp, tombstone.headers) == (None, 9, {})
        assert driver.counters("user_account").retracted == 1


def test_a_joiner_returning_none_retracts_the_result() -> None:
    app = App("accounts")
    users, accounts = app.table("users"), app.table("accounts")

    @app.join(users, accounts, how="left", into="user-accounts")
    def user_account(user: dict[str, Any], account: dict[str, Any] | None) -> Any:
        return None if user.get("hidden") else {"user": user["name"]}

    with TestDriver(app) as driver:
        driver.pipe("users", {"name": "ann"}, key="k", timestamp=1)
        driver.pipe("users", {"name": "ann", "hidden": True}, key="k", timestamp=2)
        assert outputs(driver) == [("k", {"user": "ann"}, 1), ("k", None, 2)]


def test_the_stores_hold_each_sides_latest_value(driver: TestDriver) -> None:
    driver.pipe("users", {"name": "ann"}, key="k", timestamp=1)
    driver.pipe("users", {"name": "bob"}, key="k", timestamp=2)
    assert driver.key_value_store("user_account", "left").get(b"k") is not None
    assert driver.key_value_store("user_account", "right").get(b"k") is None


def test_a_table_on_the_left_needs_a_table_on_the_right_and_no_window() -> None:
    from streamjoin import JoinWindows

    app = App("accounts")
    users, clicks, accounts = app.table("users"), app.topic("clicks"), app.table("accounts")
    with pytest.raises(ConfigurationError, match="a table on the left joins only a table"):
        app.join(users, clicks, into="out", name="bad")(lambda u, c: u)
    with pytest.raises(ConfigurationError, match="a table-table join takes no window"):
        app.join(users, accounts, into="out", name="bad", window=JoinWindows(before=0, after=1))(
            lambda u, a: u
        )


def test_table_table_inputs_must_be_co_partitioned() -> None:
    app = App("accounts")
    users, accounts = app.table("users", partitions=2), app.table("accounts", partitions=3)
    app.join(users, accounts, into="out", name="pair")(lambda u, a: u)
    with pytest.raises(ConfigurationError, match="not co-partitioned"):
        TestDriver(app)


def test_a_delete_replayed_after_a_restore_that_applied_it_still_retracts(
    tmp_path: Any,
) -> None:
    """A worker restores a table's store from its topic up to its end, then processes records
    from the committed offset again: their old values are lost, so a delete assumes a result
    existed (a tombstone too many at worst, never a stale result left standing)."""
    from aiokafka.structs import ConsumerRecord

    from streamjoin.runtime.joins.records import Side, SourceRecord
    from streamjoin.runtime.joins.table_table import TableTableJoin
    from streamjoin.runtime.topology.app_topology import store_specs
    from streamjoin.state.memory import MemoryBudget
    from streamjoin.state.stores.kv_store import KeyValueStore

    with make("outer") as driver:  # (ann, None) was a result until the delete
        spec = driver.app.get_join("user_account")
    left_spec, right_spec = store_specs(spec)
    left = KeyValueStore(left_spec, tmp_path / "l", MemoryBudget())
    right = KeyValueStore(right_spec, tmp_path / "r", MemoryBudget())
    user = b'{"name": "ann"}'

    def record(offset: int, key: bytes, value: bytes | None, t: int) -> ConsumerRecord:  # type: ignore[type-arg]
        return ConsumerRecord("t", 0, offset, t, 0, key, value, None, 1, 1, ())

    left.restore([record(0, b"k", user, 1), record(1, b"k", None, 3)])  # the delete is applied
    for store in (left, right):
        store.attach_writer(object())  # type: ignore[arg-type]  # a source-fed store logs nothing
    join = TableTableJoin(spec, left, right)
    replayed = join.process(SourceRecord(Side.LEFT, b"k", None, 3, 1))
    assert [(r.key, r.left, r.right, r.timestamp) for r in replayed] == [(b"k", None, None, 3)]
    fresh = join.process(SourceRecord(Side.LEFT, b"k", None, 4, 2))  # past the restore: exact
    assert fresh == []
    left.close()
    right.close()


def test_a_keyless_table_record_is_a_bad_record() -> None:
    with make("outer") as driver:
        driver.pipe("users", {"name": "ann"}, key=None, timestamp=1)
        assert outputs(driver) == []
        assert len(driver.dead_letters()) == 1
