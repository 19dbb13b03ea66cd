"""Spark backfill/audit run every join kind: through key_by, chained, with tables. A foreign-key
join is named by its own name; its internal half ("-fk") is refused in one line naming it, and
"every join of the app" leaves that half out."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin import App, JoinWindows
from streamjoin.cli.spark.support import load_joins, runnable_join
from streamjoin.errors import ConfigurationError

APP = """
from streamjoin import App, JoinWindows

app = App("shop")
clicks = app.topic("c").filter(bool).key_by("auction").map_values(dict)
app.join(app.topic("i"), clicks, window=JoinWindows.of(1), into="a", name="a")(max)
app.join(app.topic("a"), app.topic("v"), window=JoinWindows.of(1), into="r", name="b")(max)
app.join(app.topic("visits"), app.global_table("g"), key="c", into="o", name="geo")(max)
users, accounts = app.table("users"), app.table("accounts")
app.join(users, accounts, into="pairs", name="pairs")(max)
prices = app.table("prices", versioned=True, history_ms=1_000)
app.join(app.topic("trades"), prices, into="priced", name="price")(max)
app.join(users, accounts, foreign_key=lambda u: u, into="owned", name="owned")(max)
"""


def test_every_join_kind_runs_and_a_foreign_key_join_by_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "shop_app.py").write_text(APP)
    app, specs = load_joins("shop_app:app", tmp_path, None)
    names = ["a", "b", "geo", "pairs", "price", "owned"]
    assert [s.name for s in specs] == names
    assert [runnable_join(app, name).name for name in names] == names
    with pytest.raises(
        ConfigurationError, match="the internal half of the foreign-key join 'owned'"
    ):
        runnable_join(app, "owned-fk")


def test_an_unknown_join_is_one_line() -> None:
    app = App("x")
    app.join(app.topic("l"), app.topic("r"), window=JoinWindows.of(1), into="o", name="j")(max)
    with pytest.raises(ConfigurationError, match="has no join 'k' \\(joins: j\\)"):
        runnable_join(app, "k")
