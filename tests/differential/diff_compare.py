"""Whether streamjoin's outputs equal Kafka Streams' for one scenario, allowing only for the
differences docs/joins.md ("Differences from Kafka Streams") lists:

- Records streamjoin sends to the dead-letter topic because they have no key (a null key, or a
  `key_by`/`key=` that gives None) are left out of Kafka Streams' outputs too; a dead letter for
  any other reason is a difference.
- Left/outer stream-stream joins: a non-match Kafka Streams emits for a record that it later
  (or earlier) also joins is left out (streamjoin never emits those), and the non-matches are
  compared as a multiset (streamjoin emits them later: when no record can match them any more).
  Joined results are compared in order, as everything of every other family is.
- Inner foreign-key joins: a left update that keeps its foreign key, whose right value is
  absent, makes streamjoin send a tombstone for a key that has none already (Kafka Streams sends
  nothing, and so keeps a stale result when a right delete crosses such an update); those
  repeated tombstones are left out of streamjoin's outputs.
"""

from __future__ import annotations

from collections import Counter

from diff_kafka_streams import Output, Outputs
from diff_scenarios import Scenario
from diff_streamjoin import Run, foreign_key

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


def _kept_foreign_keys(scenario: Scenario) -> set[int]:
    """Indexes of the left updates that keep a foreign key whose right value is absent."""
    lefts: dict[str | None, str] = {}
    rights: set[str | None] = set()
    kept = set()
    for index, event in enumerate(scenario.events):
        if event.topic == "right":
            (rights.add if event.value is not None else rights.discard)(event.key)
        elif event.topic == "left" and event.key is not None:
            old, fk = lefts.get(event.key), foreign_key(event.value)
            if old is not None and fk is not None and fk == foreign_key(old) and fk not in rights:
                kept.add(index)
            if event.value is None:
                lefts.pop(event.key, None)
            else:
                lefts[event.key] = event.value
    return kept


def _without_repeated_tombstones(
    records: list[Output], causes: list[int], kept: set[int]
) -> list[Output]:
    """`records` less the tombstones that a kept foreign key caused for a key without a result."""
    state: dict[str | None, str | None] = {}
    left = []
    for (key, value, timestamp), cause in zip(records, causes, strict=True):
        if value is None and state.get(key) is None and cause in kept:
            continue
        state[key] = value
        left.append((key, value, timestamp))
    return left


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
        if scenario.kind == "fk" and scenario.how == "inner":
            causes = streamjoin.causes.get(topic, [])
            ours = _without_repeated_tombstones(ours, causes, _kept_foreign_keys(scenario))
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
