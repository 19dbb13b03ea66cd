"""Small apps for join semantics tests, built fresh per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from streamjoin import App, JoinWindows
from streamjoin.dsl.spec import JoinKind
from streamjoin.testing import TestDriver


def pair(left: Any, right: Any) -> dict[str, Any]:
    return {"l": left, "r": right}


@pytest.fixture
def make_driver() -> Iterator[Callable[..., TestDriver]]:
    """make_driver(how, before, after, grace) -> a TestDriver over topics "L" and "R" (JSON
    values, str keys) joined into "out" as {"l": left, "r": right}."""
    drivers: list[TestDriver] = []

    def make(
        how: JoinKind = "inner", before: int = 10, after: int = 10, grace: int = 0, **settings: Any
    ) -> TestDriver:
        app = App("semantics", **settings)
        left, right = app.topic("L"), app.topic("R")
        window = JoinWindows(before=before, after=after, grace=grace)
        app.join(left, right, window=window, how=how, into="out", name="j")(pair)
        driver = TestDriver(app)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()
