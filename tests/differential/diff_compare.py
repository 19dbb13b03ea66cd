"""Whether streamjoin's outputs equal Kafka Streams' for one scenario, allowing only for the
differences README "Differences from Kafka Streams" lists:

- Records streamjoin sends to the dead-letter topic because they have no key (a null key, or a
  `key_by`/`key=` that gives None) are left out of Kafka Streams' outputs too; a dead letter for
  any other reason is a difference.
- Left/outer stream-stream joins: a non-match Kafka Streams emits for a record that it later
  (or earlier) also joins is left out (streamjoin never emits those), and the non-matches are
  compared as a multiset (streamjoin emits them later: when no record can match them any more).
  Joined results are compared in order, as everything of every other family is.
"""

from __future__ import annotations

from collections import Counter

from diff_kafka_streams import Output, Outputs
from diff_scenarios import Scenario
from diff_streamjoin import Run

__all__ = ("compare", "render")

_KEYLESS = ("KeylessRecordError:", "StepError:")


def _parts(value: str | None) -> list[str]:
    return [] if value is None else value.split("+")


def render(records: list[Output]) -> str:
    if not records:
        return "nothing"
    return ", ".join(
        f"[{'null' if k is None else k}, {'null' if v is None else v}, {t}]" for k, v, t in records
    )


def _without(outputs: Outputs, names: set[str]) -> Outputs:
    return {
        topic: [r for r in records if not names.intersection(_parts(r[1]))]
        for topic, records in outputs.items()
    }


def _spurious(records: list[Output]) -> set[str]:
    """Values of non-matches whose record also appears joined in `records`."""
    joined = {part for _, value, _ in records if "_" not in _parts(value) for part in _parts(value)}
    return {
        value
        for _, value, _ in records
        if value is not None
        and "_" in _parts(value)
        and any(p in joined for p in _parts(value) if p != "_")
    }


def _is_match(record: Output) -> bool:
    return "_" not in _parts(record[1])


def compare(scenario: Scenario, kafka_streams: Outputs | str, streamjoin: Run) -> str | None:
    """None when equal, else what differs (one paragraph)."""
    if isinstance(kafka_streams, str):
        return f"Kafka Streams failed: {kafka_streams}"
    unexpected = [d for d in streamjoin.dead_letters if not d[2].startswith(_KEYLESS)]
    if unexpected:
        return f"streamjoin dead-lettered {unexpected}"
    expected = _without(kafka_streams, {v for _, v, _ in streamjoin.dead_letters if v})
    relaxed = scenario.kind == "ss" and scenario.how != "inner"
    differences = []
    for topic in sorted(set(expected) | set(streamjoin.outputs)):
        theirs = expected.get(topic, [])
        ours = streamjoin.outputs.get(topic, [])
        if relaxed:
            spurious = _spurious(theirs)
            theirs = [r for r in theirs if r[1] not in spurious]
            same = [r for r in theirs if _is_match(r)] == [r for r in ours if _is_match(r)]
            same = same and Counter(r for r in theirs if not _is_match(r)) == Counter(
                r for r in ours if not _is_match(r)
            )
        else:
            same = theirs == ours
        if not same:
            differences.append(
                f"{topic}: Kafka Streams {render(kafka_streams.get(topic, []))}; "
                f"streamjoin {render(ours)}"
            )
    return "; ".join(differences) or None
