"""Stream-table joins: each stream record meets the table's latest value for its key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from streamjoin import App
from streamjoin.dsl.spec import JoinKind
from streamjoin.testing import TestDriver


def make(how: JoinKind) -> TestDriver:
    app = App("enrich")
    clicks, users = app.topic("clicks"), app.table("users")

    @app.join(clicks, users, how=how, into="enriched")
    def enrich(click: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
        return {**click, "country": user["country"] if user else None}

    return TestDriver(app)


@pytest.fixture(params=["inner", "left"])
def driver(request: pytest.FixtureRequest) -> Iterator[TestDriver]:
    with make(request.param) as running:
        yield running


def test_stream_records_see_the_latest_table_value(driver: TestDriver) -> None:
    driver.pipe("users", {"country": "NL"}, key="u1", timestamp=1)
    driver.pipe("clicks", {"ad": 1}, key="u1", timestamp=10)
    driver.pipe("users", {"country": "FR"}, key="u1", timestamp=20)
    driver.pipe("clicks", {"ad": 2}, key="u1", timestamp=30)
    assert [r.value for r in driver.read_output("enriched")] == [
        {"ad": 1, "country": "NL"},
        {"ad": 2, "country": "FR"},
    ]


def test_table_updates_alone_emit_nothing(driver: TestDriver) -> None:
    driver.pipe("users", {"country": "NL"}, key="u1", timestamp=1)
    assert driver.read_output("enriched") == []
    assert driver.key_value_store("enrich", "table").get(b"u1") is not None


def test_a_tombstone_removes_the_key() -> None:
    with make("left") as driver:
        driver.pipe("users", {"country": "NL"}, key="u1", timestamp=1)
        driver.pipe("users", None, key="u1", timestamp=2)
        driver.pipe("clicks", {"ad": 1}, key="u1", timestamp=3)
        assert [r.value for r in driver.read_output("enriched")] == [{"ad": 1, "country": None}]


def test_inner_drops_and_left_keeps_records_without_a_table_value() -> None:
    for how, expected in (("inner", []), ("left", [{"ad": 1, "country": None}])):
        with make(how) as driver:  # type: ignore[arg-type]
            driver.pipe("clicks", {"ad": 1}, key="nobody", timestamp=5)
            assert [r.value for r in driver.read_output("enriched")] == expected
