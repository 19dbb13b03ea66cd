"""The collector is tuned while any worker runs, and restored once the last one ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from streamjoin.runtime.process.gc_tuning import YOUNG_THRESHOLD, collector_tuned_for_throughput


@pytest.fixture
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_workers_ending_in_any_order_restore_the_original(
    default_thresholds: tuple[int, int, int],
) -> None:
    first, second = collector_tuned_for_throughput(), collector_tuned_for_throughput()
    first.__enter__()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_freeze_count() > 0
    second.__enter__()
    first.__exit__(None, None, None)  # the first worker ends while the second still runs
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    second.__exit__(None, None, None)
    assert gc.get_threshold() == default_thresholds
    assert gc.get_freeze_count() == 0


def test_a_higher_threshold_set_by_the_user_is_kept(
    default_thresholds: tuple[int, int, int],
) -> None:
    gc.set_threshold(500_000, 10, 10)
    with collector_tuned_for_throughput():
        assert gc.get_threshold() == (500_000, 10, 10)
    assert gc.get_threshold() == (500_000, 10, 10)
