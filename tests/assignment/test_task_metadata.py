"""SubscriptionInfo and AssignmentInfo round trips, newer versions and bad bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.model import TopicPartition
from streamjoin.assignment.task_metadata import (
    AssignmentInfo,
    QueryHost,
    SubscriptionInfo,
    decode_assignment_info,
    decode_subscription_info,
    encode_assignment_info,
    encode_subscription_info,
)
from streamjoin.assignment.tasks.model import TaskId
from streamjoin.errors import ProtocolDecodeError

tasks = st.builds(TaskId, st.integers(0, 50), st.integers(0, 500))
task_tuples = st.lists(tasks, unique=True, max_size=20).map(lambda ts: tuple(sorted(ts)))


@given(
    process=st.text(min_size=1, max_size=40),
    capacity=st.integers(1, 64),
    endpoint=st.none() | st.text(max_size=30),
    counter=st.integers(-(2**31), 2**31 - 1),
    sums=st.dictionaries(tasks, st.integers(-2, 2**62), max_size=30),
    standby=task_tuples,
    lags=st.dictionaries(tasks, st.integers(0, 2**40), max_size=10),
    query_url=st.none() | st.text(max_size=30),
    status_url=st.none() | st.text(max_size=30),
    draining=st.booleans(),
)
def test_subscription_info_round_trip(
    process: str,
    capacity: int,
    endpoint: str | None,
    counter: int,
    sums: dict[TaskId, int],
    standby: tuple[TaskId, ...],
    lags: dict[TaskId, int],
    query_url: str | None,
    status_url: str | None,
    draining: bool,
) -> None:
    info = SubscriptionInfo(
        process,
        capacity,
        endpoint,
        counter,
        sums,
        standby,
        lags,
        query_url=query_url,
        status_url=status_url,
        draining=draining,
    )
    assert decode_subscription_info(encode_subscription_info(info)) == info


@given(
    active=task_tuples,
    standby=task_tuples,
    learner=task_tuples,
    warmup=task_tuples,
    probe=st.integers(-1, 2**50),
    query_hosts=st.lists(
        st.builds(QueryHost, st.text(min_size=1, max_size=20), task_tuples, task_tuples),
        unique_by=lambda h: h.url,
        max_size=4,
    ).map(lambda hs: tuple(sorted(hs, key=lambda h: h.url))),
    draining=st.booleans(),
)
def test_assignment_info_round_trip(
    active: tuple[TaskId, ...],
    standby: tuple[TaskId, ...],
    learner: tuple[TaskId, ...],
    warmup: tuple[TaskId, ...],
    probe: int,
    query_hosts: tuple[QueryHost, ...],
    draining: bool,
) -> None:
    hosts = {"w1:9100": (TopicPartition("a", 0), TopicPartition("b", 3))}
    info = AssignmentInfo(
        active,
        standby,
        learner,
        hosts,
        probe,
        0,
        warmup=warmup,
        query_hosts=query_hosts,
        draining=draining,
    )
    assert decode_assignment_info(encode_assignment_info(info)) == info


def test_a_v1_assignment_warms_up_its_learners_only() -> None:
    """A v1 leader knows no standby warm-ups: its learners are all there is to watch."""
    info = AssignmentInfo((), (TaskId(0, 1),), (TaskId(0, 2),), version=1, warmup=(TaskId(0, 1),))
    assert decode_assignment_info(encode_assignment_info(info)).warmup == (TaskId(0, 2),)


def test_v2_metadata_carries_no_query_urls_and_stays_readable() -> None:
    """A v2 member (or a group answered in v2) neither sends nor receives query URLs."""
    info = SubscriptionInfo("p1", query_url="http://a:1", version=2, latest_supported=2)
    assert decode_subscription_info(encode_subscription_info(info)).query_url is None
    told = AssignmentInfo(
        (TaskId(0, 0),), version=2, query_hosts=(QueryHost("http://a:1", (TaskId(0, 0),)),)
    )
    decoded = decode_assignment_info(encode_assignment_info(told))
    assert (decoded.active, decoded.query_hosts) == ((TaskId(0, 0),), ())


def test_v3_metadata_carries_no_status_url_and_stays_readable() -> None:
    """A v3 member neither sends a status URL nor fails on reading a v4 member's."""
    info = SubscriptionInfo("p1", query_url="http://a:1", status_url="http://a:2", version=3)
    decoded = decode_subscription_info(encode_subscription_info(info))
    assert (decoded.query_url, decoded.status_url) == ("http://a:1", None)


def test_v4_metadata_carries_no_draining_and_stays_readable() -> None:
    """A v4 member never drains; a v4 leader reads a v5 member's subscription (and ignores that
    it drains: the member then leaves as before, see runtime/process/draining.py)."""
    info = SubscriptionInfo("p1", query_url="http://a:1", draining=True, version=4)
    decoded = decode_subscription_info(encode_subscription_info(info))
    assert (decoded.query_url, decoded.draining) == ("http://a:1", False)
    told = AssignmentInfo((TaskId(0, 0),), version=4, draining=True)
    assert decode_assignment_info(encode_assignment_info(told)).draining is False


def test_a_newer_version_is_read_for_its_common_fields() -> None:
    info = SubscriptionInfo("p1", 2, None, 7, {TaskId(0, 1): 42}, version=2, latest_supported=2)
    decoded = decode_subscription_info(encode_subscription_info(info) + b"future fields")
    assert (decoded.process_id, decoded.offset_sums, decoded.version) == (
        "p1",
        {TaskId(0, 1): 42},
        2,
    )
    later = encode_assignment_info(AssignmentInfo(active=(TaskId(0, 0),), version=6)) + b"\x00" * 9
    assert decode_assignment_info(later).active == (TaskId(0, 0),)


def test_bad_bytes_raise_protocol_decode_error() -> None:
    good = encode_subscription_info(SubscriptionInfo("p1"))
    with pytest.raises(ProtocolDecodeError, match="SubscriptionInfo: truncated"):
        decode_subscription_info(good[:-3])
    with pytest.raises(ProtocolDecodeError, match="unknown version 0"):
        decode_assignment_info(b"\x00\x00\x00\x01")
