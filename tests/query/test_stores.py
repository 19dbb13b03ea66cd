"""The query store registry: names users query by, keys as the stores hold them, values as JSON."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.dsl.serdes import JsonSerde, StrSerde, serde_for
from streamjoin.query.stores import BadKey, QueryableStore, key_bytes, queryable_stores, to_json


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
    }


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
