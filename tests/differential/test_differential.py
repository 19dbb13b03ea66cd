"""Join results equal Kafka Streams' own (issue 34): seeded random scenarios of every join family
go through streamjoin's TestDriver and through Apache Kafka Streams' TopologyTestDriver (the
release streamjoin pins, one JVM for all of them) and their outputs are compared record by
record: key, value, timestamp and order (docs/joins.md, "Differences from Kafka Streams", lists
the only differences allowed, and diff_compare.py how they are allowed for).

Each run draws a new seed and prints it; `STREAMJOIN_DIFFERENTIAL_SEED=N` runs that seed again
(`STREAMJOIN_DIFFERENTIAL_SCENARIOS` sets the scenarios per family). A difference is shrunk to a
minimal scenario and printed. `python bench/differential.py` runs thousands.
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
from pathlib import Path

import pytest
from diff_kafka_streams import compile_harness, kafka_streams
from diff_scenarios import FAMILIES
from diff_suite import FamilyResult, run_families, scratch_dir

SEED = int(os.environ.get("STREAMJOIN_DIFFERENTIAL_SEED") or random.SystemRandom().randrange(10**6))
PER_FAMILY = int(os.environ.get("STREAMJOIN_DIFFERENTIAL_SCENARIOS") or 12)
RERUN = (
    f"STREAMJOIN_DIFFERENTIAL_SEED={SEED} STREAMJOIN_DIFFERENTIAL_SCENARIOS={PER_FAMILY} "
    ".venv/bin/python -m pytest tests/differential"
)


@pytest.fixture(scope="module")
def results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, FamilyResult]:
    classes = compile_harness(tmp_path_factory.mktemp("harness"))
    with (
        tempfile.TemporaryDirectory(prefix="kafka-streams-", dir=scratch_dir()) as tmp,
        kafka_streams(classes, Path(tmp)) as harness,
    ):
        found = run_families(harness, SEED, PER_FAMILY)
    different = sum(len(r.different) for r in found.values())
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(
            f"\ndifferential: seed {SEED}, {len(found)} families x {PER_FAMILY} scenarios, "
            f"{different} different (re-run: {RERUN})"
        )
    return found


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_gives_kafka_streams_results(
    results: dict[str, FamilyResult], family: str
) -> None:
    result = results[family]
    assert result.scenarios == PER_FAMILY
    shown = "\n".join(f"- {d}" for d in result.different[:1])
    assert not result.different, (
        f"{len(result.different)} of {result.scenarios} {family} scenarios differ from Kafka "
        f"Streams (seed {SEED}; re-run: {RERUN}); the first, shrunk:\n{shown}"
    )
