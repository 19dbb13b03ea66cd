"""The cyclic garbage collector is paused while an assignor runs, and restored after."""

from __future__ import annotations

import gc
import traceback

import pytest

from streamjoin.assignment.consumer.collector import collector_paused
from streamjoin.assignment.consumer.registry import ASSIGNORS, create_assignor
from streamjoin.assignment.model import Subscription


def test_paused_inside_and_restored_after_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_no_collection_runs_inside_an_assignor(name: str) -> None:
    """With a young collection due every 100 allocations, 20,000 new partitions would start
    hundreds inside the assignor; none starts there (gc.callbacks sees every collection; one
    may start as the pause begins, and the one deferred runs once it ends, in `collector`)."""
    inside: list[str] = []

    def record(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            files = [frame.filename for frame in traceback.extract_stack()]
            inside.extend(
                f for f in files if "streamjoin/assignment" in f and not f.endswith("collector.py")
            )

    topics = {f"{name}-a": 10_000, f"{name}-b": 10_000}  # not cached by an earlier test
    subscriptions = {f"m{i}": Subscription(tuple(topics)) for i in range(50)}
    assignor = create_assignor(name)
    threshold = gc.get_threshold()
    gc.callbacks.append(record)
    gc.set_threshold(100)
    try:
        result = assignor.assign(topics, subscriptions)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(record)
    assert sum(len(given.partitions) for given in result.values()) == 20_000
    assert inside == []
    assert gc.isenabled()
