"""The query store registry: names users query by, keys as the stores hold them, values as JSON."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.dsl.serdes import JsonSerde, StrSerde, serde_for
from streamjoin.query.stores import (
    BadKey,
    QueryableStore,
    key_bytes,
    queryable_stores,
    to_json,
    valid_version,
)


@dataclass
class User:
    name: str
    tags: list[str]


def app_with_both_joins() -> App:
    app = App("q")
    users = app.table("users", value_type=User)
    views = app.topic("views")

    @app.join(views, users, into="enriched", name="enrich")
    def enrich(view: object, user: object) -> object:
        return view

    clicks, imps = app.topic("clicks", key_type=dict), app.topic("imps", key_type=User)

    @app.join(imps, clicks, window=JoinWindows(before=0, after=1_000), into="out", name="att")
    def attribute(imp: object, click: object) -> object:
        return imp

    return app


def test_tables_go_by_their_topic_and_window_stores_by_their_describe_names() -> None:
    stores = queryable_stores(app_with_both_joins().joins)
    assert {n: (s.kind, s.subtopology, s.local_name) for n, s in stores.items()} == {
        "users": ("table", "enrich", "enrich-table"),
        "att-left": ("window", "att", "att-left"),
        "att-right": ("window", "att", "att-right"),
    }


def test_both_tables_of_a_table_table_join_go_by_their_topics() -> None:
    app = App("bank")
    users, accounts = app.table("users"), app.table("accounts")
    app.join(users, accounts, how="outer", into="user-accounts", name="pair")(max)
    prices = app.table("prices", versioned=True, history_ms=1_000)
    app.join(app.topic("trades"), prices, into="priced", name="price")(max)
    stores = queryable_stores(app.joins)
    assert {n: (s.kind, s.subtopology, s.local_name) for n, s in stores.items()} == {
        "users": ("table", "pair", "pair-left"),
        "accounts": ("table", "pair", "pair-right"),
        "prices": ("versioned", "price", "price-table"),
    }
    assert not stores["prices"].ordered and stores["users"].ordered


def test_foreign_key_tables_go_by_their_topics_and_global_tables_are_global() -> None:
    app = App("shop")
    orders, customers = app.table("orders", value_type=User), app.table("customers")
    app.join(orders, customers, foreign_key=lambda o: o.name, into="oc", name="oc")(max)
    countries = app.global_table("countries", key_type=dict)
    app.join(app.topic("visits"), countries, key=lambda v: v, into="geo", name="geo")(max)
    stores = queryable_stores(app.joins)
    assert {n: (s.kind, s.subtopology, s.local_name) for n, s in stores.items()} == {
        "orders": ("table", "oc", "oc-left"),  # the subscription store is internal
        "customers": ("table", "oc-fk", "oc-fk-right"),
        "countries": ("global", "", "countries"),
    }
    assert stores["orders"].value_serde.deserialize(b'{"name": "a", "tags": []}') == User("a", [])
    assert stores["countries"].is_global and stores["countries"].ordered
    assert key_bytes(stores["countries"], '{"iso": "fr"}') == b'{"iso":"fr"}'


versions_strategy = st.dictionaries(
    st.integers(0, 100), st.one_of(st.none(), st.binary(min_size=1, max_size=2)), max_size=8
)


@given(versions_strategy, st.one_of(st.none(), st.integers(-1, 101)))
def test_the_version_valid_at_a_time_is_the_last_one_from_before_it(
    written: dict[int, bytes | None], as_of: int | None
) -> None:
    versions = sorted(written.items())
    at = max(written, default=0) if as_of is None else as_of
    started = [t for t in written if t <= at]
    expected = None
    if started and written[max(started)] is not None:
        later = [t for t in written if t > max(started)]
        expected = (max(started), written[max(started)], min(later) if later else None)
    assert valid_version(versions, as_of) == expected


@given(st.text())
def test_a_str_key_is_its_utf8_text(text: str) -> None:
    store = QueryableStore("s", "table", "j", "j-table", StrSerde(), JsonSerde())
    assert key_bytes(store, text) == text.encode()


def test_other_keys_are_read_with_their_serde_and_encoded_in_its_form() -> None:
    stores = queryable_stores(app_with_both_joins().joins)
    assert key_bytes(stores["att-right"], '{"b": 1,  "a": [2]}') == b'{"b":1,"a":[2]}'
    assert key_bytes(stores["att-right"], "plain") == b'"plain"'
    user = key_bytes(stores["att-left"], '{"name": "ann", "tags": []}')
    assert user == serde_for(User).serialize(User("ann", []))
    with pytest.raises(BadKey, match="key 'nope' is not a key of store 'att-left'"):
        key_bytes(stores["att-left"], "nope")


def test_values_become_json_ready_data() -> None:
    assert to_json(User("ann", ["a"])) == {"name": "ann", "tags": ["a"]}
    assert to_json({"raw": b"\x00\x01"}) == {"raw": "AAE="}
