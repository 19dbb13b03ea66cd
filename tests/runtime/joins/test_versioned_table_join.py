"""Stream-table joins against a versioned table (KIP-914): a stream record joins the table value
valid at its own timestamp, also when table updates arrive out of order within the history; a
stream record older than the history joins only the key's latest version, which never expires,
if it was valid then (as Kafka Streams' versioned stores), and is counted."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin import App
from streamjoin.dsl.spec import JoinKind
from streamjoin.errors import ConfigurationError
from streamjoin.testing import TestDriver

DAY = 86_400_000


def make(how: JoinKind, history_ms: int = DAY) -> TestDriver:
    app = App("market")
    trades = app.topic("trades")
    prices = app.table("prices", versioned=True, history_ms=history_ms)

    @app.join(trades, prices, how=how, into="priced-trades")
    def price(trade: dict[str, Any], price: dict[str, Any] | None) -> dict[str, Any]:
        return {"qty": trade["qty"], "price": price and price["p"]}

    return TestDriver(app)


def priced(driver: TestDriver) -> list[tuple[int, Any]]:
    return [(r.timestamp, r.value["price"]) for r in driver.read_output("priced-trades")]


def test_a_trade_joins_the_price_valid_at_its_time() -> None:
    with make("inner") as driver:
        driver.pipe("prices", {"p": 10}, key="X", timestamp=1_000)
        driver.pipe("prices", {"p": 11}, key="X", timestamp=2_000)
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=1_500)  # before the 11
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=2_500)
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=500)  # before any price
        assert priced(driver) == [(1_500, 10), (2_500, 11)]


def test_an_out_of_order_price_update_takes_its_place() -> None:
    with make("inner") as driver:
        driver.pipe("prices", {"p": 10}, key="X", timestamp=1_000)
        driver.pipe("prices", {"p": 12}, key="X", timestamp=3_000)
        driver.pipe("prices", {"p": 11}, key="X", timestamp=2_000)  # arrives late
        for t in (1_999, 2_000, 2_999, 3_000):
            driver.pipe("trades", {"qty": 1}, key="X", timestamp=t)
        assert priced(driver) == [(1_999, 10), (2_000, 11), (2_999, 11), (3_000, 12)]
        versions = driver.versioned_store("price").versions(b"X")
        assert [t for t, _ in versions] == [1_000, 2_000, 3_000]


def test_a_deleted_price_joins_nothing_from_its_time_on() -> None:
    with make("left") as driver:
        driver.pipe("prices", {"p": 10}, key="X", timestamp=1_000)
        driver.pipe("prices", None, key="X", timestamp=2_000)
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=1_500)
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=2_500)
        assert priced(driver) == [(1_500, 10), (2_500, None)]


@pytest.mark.parametrize(("how", "expected"), [("inner", []), ("left", [(500, None)])])
def test_a_trade_older_than_the_history_and_the_latest_price_joins_nothing(
    how: JoinKind, expected: list[tuple[int, Any]]
) -> None:
    with make(how, history_ms=1_000) as driver:
        driver.pipe("prices", {"p": 10}, key="X", timestamp=100)
        driver.pipe("prices", {"p": 11}, key="X", timestamp=2_000)  # history back to 1000
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=500)
        assert priced(driver) == expected
        assert driver.counters("price").too_old == 1


@pytest.mark.parametrize("how", ["inner", "left"])
def test_the_latest_version_of_a_key_never_expires(how: JoinKind) -> None:
    """Issue 34's third example, as Kafka Streams 4.4 gives it: history 5 ms, the store has
    seen 42, yet L9@32 finds b's latest version R3@29 (valid at 32)."""
    with make(how, history_ms=5) as driver:
        driver.pipe("prices", {"p": 3}, key="b", timestamp=29)
        driver.pipe("prices", {"p": 4}, key="a", timestamp=42)
        driver.pipe("trades", {"qty": 9}, key="b", timestamp=32)
        assert priced(driver) == [(32, 3)]
        driver.pipe("trades", {"qty": 9}, key="b", timestamp=28)  # before the latest version
        assert priced(driver) == ([] if how == "inner" else [(28, None)])
        assert driver.counters("price").too_old == 2


def test_a_price_update_older_than_the_history_is_dropped_and_counted() -> None:
    with make("inner", history_ms=1_000) as driver:
        driver.pipe("prices", {"p": 10}, key="X", timestamp=5_000)
        driver.pipe("prices", {"p": 9}, key="X", timestamp=3_000)
        assert driver.counters("price").too_old_updates == 1
        driver.pipe("trades", {"qty": 1}, key="X", timestamp=4_500)
        assert priced(driver) == []  # no price was valid at 4500


def test_versioned_needs_a_history_and_joins_streams_only() -> None:
    app = App("market")
    with pytest.raises(ConfigurationError, match="versioned=True needs history_ms"):
        app.table("prices", versioned=True)
    with pytest.raises(ConfigurationError, match="history_ms applies to versioned=True only"):
        app.table("prices", history_ms=5)
    prices = app.table("prices", versioned=True, history_ms=5)
    with pytest.raises(ConfigurationError, match="a versioned table joins a stream"):
        app.join(app.table("other"), prices, into="out", name="tt")(lambda a, b: a)
