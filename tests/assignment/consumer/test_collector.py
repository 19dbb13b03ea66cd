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


def test_what_is_young_moves_to_the_oldest_generation_without_a_collection() -> None:
    collections: list[str] = []
    gc.callbacks.append(lambda phase, _info: collections.append(phase))
    try:
        with collector_paused():
            made: list[list[int]] = [[] for _ in range(1_000)]
            assert gc.is_tracked(made[0])
            young = {id(o) for o in gc.get_objects(generation=0)}
            assert id(made[0]) in young
        oldest = {id(o) for o in gc.get_objects(generation=2)}
    finally:
        gc.callbacks.pop()
    assert collections == []
    assert id(made[0]) in oldest
    assert gc.get_count()[0] < 10
    assert gc.get_freeze_count() == 0


def test_objects_the_application_froze_stay_frozen() -> None:
    """Checked object by object: the freeze count also falls whenever any frozen object dies,
    which another test's leftover thread may make happen meanwhile."""
    kept: list[list[int]] = [[] for _ in range(100)]
    gc.freeze()
    try:
        with collector_paused():
            made: list[list[int]] = [[] for _ in range(100)]
        seen = {id(o) for generation in range(3) for o in gc.get_objects(generation=generation)}
        assert not any(id(o) in seen for o in kept), "still frozen"
        assert id(made[0]) in {id(o) for o in gc.get_objects(generation=0)}
    finally:
        gc.unfreeze()


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
