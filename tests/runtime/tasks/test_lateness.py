"""Late records are said out loud (issue 35 item 2): the first late record of a join's task
logs one warning (how late, the grace, what to change), then one line a minute sums up the
late records while they go on; the counters keep counting them all. The payments here come
half an hour behind the order: too late for it, so they join nothing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from streamjoin import App, JoinWindows
from streamjoin.runtime.tasks import lateness
from streamjoin.testing import TestDriver

MINUTE_MS = 60_000


def _app() -> App:
    app = App("late")
    orders = app.topic("orders")
    payments = app.topic("payments")

    @app.join(
        orders,
        payments.key_by("order_id"),
        window=JoinWindows(before=0, after=10 * MINUTE_MS),
        into="paid",
    )
    def paid(order: Any, payment: Any) -> Any:
        return order

    return app


def _late_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == lateness.__name__]


def test_the_first_late_record_warns_once_then_a_line_a_minute_sums_up(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1_000.0]
    monkeypatch.setattr(lateness.time, "monotonic", lambda: clock[0])
    caplog.set_level(logging.WARNING)
    with TestDriver(_app()) as driver:
        driver.pipe("orders", {"order_id": "o1"}, key="o1", timestamp=60 * MINUTE_MS)
        for n in range(3):  # orders loaded first: the payments come behind stream time
            payment = {"order_id": "o1", "payment_id": f"p{n}"}
            driver.pipe("payments", payment, key=f"p{n}", timestamp=(30 + n) * MINUTE_MS)
        [first] = _late_lines(caplog)
        assert first.startswith(
            "join paid, task paid_0: a record of payments (re-keyed through "
            "late-paid-right-repartition)"
        )
        assert "stamped 1970-01-01T00:30:00.000+00:00 came late" in first
        assert "30.0 min behind the task's stream time" in first
        assert "no grace" not in first and "a grace of 0 ms" in first
        assert "JoinWindows(grace=...)" in first and "--max-task-idle-ms" in first
        assert "load both inputs together" in first
        clock[0] += lateness.SUMMARY_EVERY_S
        payment = {"order_id": "o1", "payment_id": "p9"}
        driver.pipe("payments", payment, key="p9", timestamp=40 * MINUTE_MS)
        summary = _late_lines(caplog)[1:]
        assert summary == [
            "join paid, task paid_0: 3 more late records in the last 60 s (the latest "
            "20.0 min behind); 4 in all"
        ]
        assert lateness.late_records(driver.counters("paid")) == 4
