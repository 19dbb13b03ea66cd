"""Spark backfill/audit say in one line what they cannot run yet: joins reading through a key_by.
filter/map_values run there, and a join reading another join's output reads that topic."""

from __future__ import annotations

import pytest

from streamjoin import App, JoinWindows
from streamjoin.cli.spark.support import runnable_join
from streamjoin.errors import ConfigurationError


def test_steps_are_refused_precisely_and_chained_joins_run() -> None:
    app = App("ads")
    impressions, clicks, attributed = app.topic("i"), app.topic("c"), app.topic("attributed")
    rekeyed = clicks.filter(bool).key_by("auction").map_values(dict)
    app.join(impressions, rekeyed, window=JoinWindows.of(1), into=attributed, name="a")(max)
    app.join(attributed, app.topic("v"), window=JoinWindows.of(1), into="r", name="b")(max)
    with pytest.raises(
        ConfigurationError,
        match="join 'a': its right input goes through filter\\(bool\\), "
        "key_by\\('auction'\\), which Spark backfill/audit cannot run yet",
    ):
        runnable_join(app, "a")
    assert runnable_join(app, "b").name == "b"
    app.join(app.topic("x"), app.topic("y").filter(bool), window=JoinWindows.of(1), into="z")(max)
    assert runnable_join(app, "max").right_steps


def test_a_global_table_join_is_refused_in_one_line() -> None:
    app = App("geo")
    app.join(app.topic("visits"), app.global_table("countries"), key="c", into="o", name="g")(max)
    with pytest.raises(ConfigurationError, match="join 'g' is a stream-global-table join: Spark"):
        runnable_join(app, "g")


@pytest.mark.parametrize("versioned", [False, True])
def test_joins_with_tables_are_refused_in_one_line(versioned: bool) -> None:
    app = App("bank")
    users, accounts = app.table("users"), app.table("accounts")
    app.join(users, accounts, into="pairs", name="pairs")(max)
    history = {"versioned": True, "history_ms": 1_000} if versioned else {}
    app.join(app.topic("trades"), app.table("prices", **history), into="priced", name="price")(max)
    with pytest.raises(ConfigurationError, match="join 'pairs' is a table-table join: Spark"):
        runnable_join(app, "pairs")
    with pytest.raises(ConfigurationError, match=r"join .price. is a stream-table join.*not joins"):
        runnable_join(app, "price")
