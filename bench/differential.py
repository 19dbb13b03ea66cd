"""Thousands of differential scenarios: streamjoin's TestDriver against Kafka Streams'
TopologyTestDriver, every join family (tests/differential runs a few hundred per CI run).

    python bench/differential.py                      # 200 scenarios per family, a new seed
    python bench/differential.py --scenarios 500 --seed 7 --family foreign-key

Prints, per family, how many scenarios ran and how many differed, the seed, the time taken and
the load; each family's first differences, shrunk to minimal scenarios. Exits 1 on a difference.
Needs the jars of `make kafka-streams-jars` and a JDK.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "differential"))

from diff_kafka_streams import compile_harness, kafka_streams
from diff_scenarios import FAMILIES
from diff_suite import run_families, scratch_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=200, help="per family (200)")
    parser.add_argument("--seed", type=int, default=None, help="default: a new one")
    parser.add_argument("--family", default="", help="only families whose name contains this")
    parser.add_argument("--shrink", type=int, default=2, help="differences shrunk per family")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    families = [f for f in FAMILIES if args.family in f]
    if not families:
        parser.error(f"no family contains {args.family!r}: {', '.join(FAMILIES)}")
    print(f"seed {seed}; {args.scenarios} scenarios per family; load {os.getloadavg()[0]:.1f}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="differential-") as classes_dir:
        classes = compile_harness(Path(classes_dir))
        with (
            tempfile.TemporaryDirectory(prefix="kafka-streams-", dir=scratch_dir()) as tmp,
            kafka_streams(classes, Path(tmp)) as harness,
        ):
            results = run_families(
                harness, seed, args.scenarios, families, shrink_first=args.shrink
            )
    elapsed = time.monotonic() - started
    width = max(len(f) for f in families)
    print(f"{'family':{width}}  scenarios  different")
    for family, result in results.items():
        print(f"{family:{width}}  {result.scenarios:9,}  {len(result.different):9,}")
    total = sum(r.scenarios for r in results.values())
    different = sum(len(r.different) for r in results.values())
    print(
        f"{'all':{width}}  {total:9,}  {different:9,}   in {elapsed:.0f} s "
        f"({1000 * elapsed / total:.0f} ms per scenario, both engines; load now "
        f"{os.getloadavg()[0]:.1f})"
    )
    for result in results.values():
        for difference in result.different[: args.shrink]:
            print(f"\n- {difference}")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
