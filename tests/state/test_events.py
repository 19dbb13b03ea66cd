from __future__ import annotations

import logging

import pytest

from streamjoin.state.events import RestoreCompleted, StateEvent, StateEvents, StateWiped


def test_listeners_receive_events_until_unsubscribed() -> None:
    events = StateEvents()
    seen: list[StateEvent] = []
    unsubscribe = events.subscribe(seen.append)
    first = RestoreCompleted("t", 10, 0.5)
    events.publish(first)
    unsubscribe()
    unsubscribe()
    events.publish(StateWiped("t", "s", "why"))
    assert seen == [first]


def test_a_failing_listener_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    events = StateEvents()
    seen: list[StateEvent] = []

    def broken(event: StateEvent) -> None:
        raise RuntimeError("boom")

    events.subscribe(broken)
    events.subscribe(seen.append)
    with caplog.at_level(logging.ERROR):
        events.publish(StateWiped("t", "s", "why"))
    assert len(seen) == 1
    assert "listener" in caplog.text
