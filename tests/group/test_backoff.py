"""Bounded, jittered exponential backoff."""

from __future__ import annotations

import pytest

from streamjoin.group.backoff import Backoff


def test_delays_double_until_the_cap_and_reset_starts_over() -> None:
    backoff = Backoff(initial=0.1, maximum=1.0, jitter=0.0)
    assert [backoff.next_delay() for _ in range(6)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert backoff.attempts == 6
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(0.1)


def test_jitter_stays_within_its_band_and_never_exceeds_the_cap() -> None:
    backoff = Backoff(initial=0.5, maximum=0.6, jitter=0.2)
    first = backoff.next_delay()
    assert 0.4 <= first <= 0.6
    for _ in range(1_000):
        assert 0.48 <= backoff.next_delay() <= 0.6


@pytest.mark.parametrize(("initial", "maximum", "jitter"), [(0, 1, 0), (2, 1, 0), (0.1, 1, 1.0)])
def test_nonsense_settings_are_refused(initial: float, maximum: float, jitter: float) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(initial, maximum, jitter)
