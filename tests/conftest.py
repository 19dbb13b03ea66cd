"""Fixtures shared by the whole suite: one embedded broker per test session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from streamjoin.broker import EmbeddedBroker


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    """A Tansu broker for the whole session; tests isolate themselves with unique names."""
    with EmbeddedBroker() as running:
        yield running


@pytest.fixture
def unique() -> str:
    """A short unique suffix for topic and group names."""
    return uuid.uuid4().hex[:10]
