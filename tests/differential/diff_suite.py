"""Run seeded scenarios of every family through both engines, count what differs per family, and
shrink each difference to a minimal scenario (used by test_differential.py and
bench/differential.py).

A family's scenarios come from `random.Random(f"{seed}:{family}")`, so one seed gives the same
scenarios whatever other families run. Kafka Streams runs a whole batch in one JVM; shrinking
sends each round of candidates (the scenario with one stretch of events removed, or a window
parameter lowered) as one batch too, and keeps the first candidate that still differs.
"""

from __future__ import annotations

import logging
import os
import random
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from diff_compare import compare
from diff_kafka_streams import KafkaStreams
from diff_scenarios import FAMILIES, Scenario, describe, generate, split_closing
from diff_streamjoin import run

__all__ = ("Difference", "FamilyResult", "differences", "run_families", "shrink")

_SHRINKABLE = ("before", "after", "grace", "history", "idle")


@dataclass
class Difference:
    scenario: Scenario
    what: str

    def __str__(self) -> str:
        return f"{describe(self.scenario)}:\n    {self.what}"


@dataclass
class FamilyResult:
    scenarios: int = 0
    different: list[Difference] = field(default_factory=list)


def scratch_dir() -> str | None:
    """Where stores go: memory (/dev/shm) where there is one, as RocksDB opens there several
    times faster; the default temporary directory otherwise."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def differences(harness: KafkaStreams, scenarios: list[Scenario]) -> list[str | None]:
    """For each scenario, what differs between the engines (None: equal). Kafka Streams works
    on the batch while streamjoin runs it here."""
    theirs = harness.start(scenarios)
    quiet = logging.getLogger("streamjoin")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # each dead letter logs a warning
    try:
        with tempfile.TemporaryDirectory(prefix="differential-", dir=scratch_dir()) as tmp:
            ours = [run(s, Path(tmp) / str(i)) for i, s in enumerate(scenarios)]
    finally:
        quiet.setLevel(level)
    return [compare(*done) for done in zip(scenarios, theirs(), ours, strict=True)]


def _smaller(scenario: Scenario) -> Iterable[Scenario]:
    """Candidates one step simpler: a stretch of events gone (longest first; the closing
    records stay: the comparison needs every non-match emitted), or a parameter lowered."""
    events, closing = split_closing(scenario.events)
    size = len(events) // 2
    while size >= 1:
        for start in range(0, len(events), size):
            yield scenario.with_events(events[:start] + events[start + size :] + closing)
        size //= 2
    for name in _SHRINKABLE:
        value = scenario.params.get(name, 0)
        least = 1 if name == "history" else 0
        for lower in sorted({least, value // 2, value - 1}):
            params = {**scenario.params, name: lower}
            window = [params.get(n) for n in ("before", "after", "grace")]
            if least <= lower < value and window != [0, 0, 0]:
                yield replace(scenario, params=params)


def shrink(harness: KafkaStreams, difference: Difference, rounds: int = 60) -> Difference:
    """A minimal scenario that still differs: greedy, one batch of candidates per round."""
    for _ in range(rounds):
        candidates = list(_smaller(difference.scenario))
        if not candidates:
            break
        for candidate, what in zip(candidates, differences(harness, candidates), strict=True):
            if what is not None:
                difference = Difference(candidate, what)
                break
        else:
            break
    return difference


def run_families(
    harness: KafkaStreams,
    seed: int,
    per_family: int,
    families: Iterable[str] = FAMILIES,
    *,
    shrink_first: int = 1,
) -> dict[str, FamilyResult]:
    """`per_family` scenarios of each family; the first `shrink_first` differences of each
    family shrunk."""
    chosen = list(families)
    batch = [
        (family, generate(family, rng))
        for family in chosen
        for rng in [random.Random(f"{seed}:{family}")]
        for _ in range(per_family)
    ]
    results = {family: FamilyResult() for family in chosen}
    found = differences(harness, [scenario for _, scenario in batch])
    for (family, scenario), what in zip(batch, found, strict=True):
        result = results[family]
        result.scenarios += 1
        if what is not None:
            difference = Difference(scenario, what)
            if len(result.different) < shrink_first:
                difference = shrink(harness, difference)
            result.different.append(difference)
    return results
