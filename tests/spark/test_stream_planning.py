"""The pure parts of `spark-stream`: how the Python source bounds a micro-batch, and the progress
line read from Spark's progress report."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.cli.spark.stream import _interval, _progress_line
from streamjoin.errors import ConfigurationError
from streamjoin.spark.kafka.offsets import OffsetRange
from streamjoin.spark.kafka.stream_source import StreamOffsets, bounded_ends
from streamjoin.spark.stream_run import batch_progress
from streamjoin.spark.streaming import streamable

_bounds = st.lists(
    st.tuples(st.integers(0, 50), st.integers(0, 200), st.integers(0, 60)),
    min_size=1,
    max_size=6,
)


def _setup(
    bounds: list[tuple[int, int, int]],
) -> tuple[list[OffsetRange], StreamOffsets]:
    """Partition p of "t": log start, high watermark, and where the last batch ended."""
    available = [
        OffsetRange("t", p, start, start + size) for p, (start, size, _) in enumerate(bounds)
    ]
    starts = {"t": {str(p): start + done for p, (start, _, done) in enumerate(bounds)}}
    return available, starts


@given(_bounds, st.integers(1, 300))
def test_a_bounded_batch_takes_as_much_as_allowed_and_never_goes_back(
    bounds: list[tuple[int, int, int]], max_records: int
) -> None:
    available, starts = _setup(bounds)
    ends = bounded_ends(starts, available, max_records)
    whole = bounded_ends(starts, available, None)
    taken = 0
    room = 0
    for r in available:
        begin = max(starts["t"][str(r.partition)], r.start)
        end = ends["t"][str(r.partition)]
        assert begin <= end <= max(begin, r.end)
        assert whole["t"][str(r.partition)] == max(begin, r.end)
        taken += end - begin
        room += max(begin, r.end) - begin
    assert taken == min(max_records, room)


def test_a_new_partition_starts_at_its_log_start() -> None:
    available = [OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 9)]
    assert bounded_ends({"t": {"0": 4}}, available, None) == {"t": {"0": 10, "1": 9}}
    assert bounded_ends({"t": {"0": 4}}, available, 4) == {"t": {"0": 6, "1": 7}}


def test_the_progress_line_of_a_batch() -> None:
    report = {
        "batchId": 3,
        "numInputRows": 1200,
        "inputRowsPerSecond": 400.0,
        "processedRowsPerSecond": 1500.5,
        "eventTime": {"watermark": "2026-11-25T10:00:00.000Z"},
        "stateOperators": [{"numRowsTotal": 70, "numRowsDroppedByWatermark": 2}],
    }
    progress = replace(batch_progress(report), late_total=5)
    assert _progress_line(progress) == (
        "batch 3: 1200 rows, input 400.0 rows/s, processed 1,500.5 rows/s, "
        "watermark 2026-11-25T10:00:00.000Z, state 70 rows, late 2 (5 in this run)"
    )
    first = batch_progress({"batchId": 0, "numInputRows": 0, "stateOperators": []})
    assert _progress_line(first).endswith("watermark -, state 0 rows, late 0 (0 in this run)")


def test_trigger_intervals() -> None:
    assert _interval("10s") == "10 seconds"
    assert _interval("500ms") == "500 milliseconds"
    assert _interval(None) is None


def test_a_windowed_join_reads_results_only_where_they_carry_its_event_time() -> None:
    """A windowed join of a windowed join's results runs in one query (bench/shop_backfill.py's
    `spark-stream --join ship` failed in Spark with "Redefining watermark is disallowed"
    before: tests/spark/test_stream_chain.py runs one); where the results carry no event time
    for it (an outer join's right-only non-matches, a table lookup's results), one line."""
    app = App("chain")
    window = JoinWindows.of(1)
    keyed = app.topic("p").key_by("order")
    app.join(app.topic("o"), keyed, window=window, into="paid", name="pay")(max)
    app.join(app.topic("paid"), app.topic("s"), window=window, into="shipped", name="ship")(max)
    countries = app.global_table("c")
    app.join(app.topic("paid"), countries, key=str, into="located", name="locate")(max)
    app.join(app.topic("located"), app.topic("d"), window=window, into="far", name="far")(max)
    app.join(app.topic("o"), app.topic("s"), window=window, how="outer", into="any", name="any")(
        max
    )
    app.join(app.topic("any").key_by("x"), app.topic("d"), window=window, into="y", name="y")(max)
    for name in ("pay", "ship", "locate"):
        assert streamable(app, app.get_join(name)).name == name
    refused = {}
    for name in ("far", "y"):
        with pytest.raises(ConfigurationError) as failure:
            streamable(app, app.get_join(name))
        refused[name] = str(failure.value)
    assert refused["far"] == (
        "join 'far' reads the output of stream-global-table join 'locate', which Spark cannot "
        "time in one stream: it allows one watermark on each path from a source and a table "
        "lookup's results do not carry the windowed join's event time; run it with `streamjoin "
        "worker`, or over history with `streamjoin backfill`"
    )
    assert refused["y"].startswith(
        "join 'y' reads the output of outer windowed stream-stream join 'any', which Spark "
        "cannot time in one stream: it allows one watermark on each path from a source and its "
        "right records without a match carry no left record's event time;"
    )
