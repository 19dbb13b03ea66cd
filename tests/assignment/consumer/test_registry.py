from __future__ import annotations

import pytest

from streamjoin.assignment.consumer.registry import ASSIGNORS, create_assignor
from streamjoin.errors import ConfigurationError


def test_every_assignor_under_its_kafka_protocol_name() -> None:
    assert sorted(ASSIGNORS) == [
        "cooperative-sticky",
        "fair",
        "range",
        "roundrobin",
        "sticky",
        "stream-join-sticky",
    ]
    for name in ASSIGNORS:
        assert create_assignor(name).name == name


def test_each_call_gives_a_fresh_assignor_with_its_own_member_state() -> None:
    assert create_assignor("sticky") is not create_assignor("sticky")


def test_unknown_names_are_rejected_with_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown assignor 'stiky' \(known: .*sticky"):
        create_assignor("stiky")
