"""A foreign-key join (Kafka Streams' KIP-213) as the two sub-topologies that run it.

The left table is keyed by its own key, the right table by the foreign key; their partition
counts are free. The left sub-topology ("<join>") reads the left table and sends, for every
left update, a subscription (left key, hash of the left value) keyed by the foreign key to
`<app_id>-<join>-subscription` (partitioned as the right table), and an unsubscription to the
old foreign key when it changed. The right sub-topology ("<join>-fk") keeps the subscriptions
per foreign key and answers each one, and every right update for all current subscribers, on
`<app_id>-<join>-response` (keyed by left key, partitioned as the left table) with the right
value and the hash it answers. The left sub-topology joins a response with its current left
value only if the hash still matches: a response to a value changed since is discarded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamjoin.dsl.serdes import serde_for
from streamjoin.dsl.spec import ForeignKey, Joiner, JoinKind, JoinSpec
from streamjoin.dsl.topics import Table, Topic
from streamjoin.errors import ConfigurationError

__all__ = ("foreign_key_specs", "right_subtopology")


def right_subtopology(join: str) -> str:
    return f"{join}-fk"


def _internal(app_id: str, join: str, what: str) -> Topic:
    return Topic(f"{app_id}-{join}-{what}", serde_for(bytes), serde_for(bytes), bytes)


def foreign_key_specs(
    app_id: str,
    name: str,
    *,
    left: Topic,
    right: Topic,
    how: JoinKind,
    into: Topic,
    joiner: Joiner,
    extract: Callable[[Any], Any],
) -> tuple[JoinSpec, JoinSpec]:
    """(left sub-topology's spec, right sub-topology's spec); refuses what cannot run."""
    where = f"join {name!r}"
    if not callable(extract):
        raise ConfigurationError(f"{where}: foreign_key takes a function of the left value")
    if not (isinstance(left, Table) and isinstance(right, Table)):
        raise ConfigurationError(
            f"{where}: a foreign-key join joins two tables (app.table) without steps"
        )
    if left.versioned or right.versioned:
        raise ConfigurationError(f"{where}: a foreign-key join takes tables without versioned=True")
    if how not in ("inner", "left"):
        raise ConfigurationError(f"{where}: a foreign-key join is inner or left, not {how!r}")
    subscription = _internal(app_id, name, "subscription")
    response = _internal(app_id, name, "response")
    left_fk = ForeignKey(extract, left, right, subscription, response, "left")
    right_fk = ForeignKey(extract, left, right, subscription, response, "right")
    left_side = JoinSpec(name, left, response, how, into, joiner, foreign_key=left_fk)
    right_side = JoinSpec(
        right_subtopology(name), subscription, right, how, response, joiner, foreign_key=right_fk
    )
    return left_side, right_side
