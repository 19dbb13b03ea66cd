"""The checks `App.join` runs on a join before it is registered: each refusal names the join and
the argument that is wrong, in one line."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from streamjoin.dsl.fields import FieldMapping
from streamjoin.dsl.spec import JOIN_KINDS, Joiner, JoinSpec
from streamjoin.dsl.steps import KeyBy
from streamjoin.dsl.topics import GlobalTable, Table, Topic
from streamjoin.dsl.windows import JoinWindows
from streamjoin.errors import ConfigurationError

__all__ = ("NAME", "check_join", "check_name", "global_lookup")

NAME = re.compile(r"^[A-Za-z0-9._-]+$")
"""App ids and join names: they name Kafka topics, consumer groups and directories."""


def check_name(name: str, joiner: Joiner) -> None:
    if not name and isinstance(joiner, FieldMapping):
        raise ConfigurationError(
            "a join built from fields(...) needs a name: app.join(..., name=...)"
        )
    if not NAME.match(name):
        raise ConfigurationError(
            f"join {name!r}: the name must be letters, digits, '.', '_' or '-'"
        )


def check_join(spec: JoinSpec) -> None:
    """Refuse a join the engines cannot run, saying which argument is wrong."""
    where = f"join {spec.name!r}"
    if not callable(spec.joiner):
        raise ConfigurationError(f"{where}: the joiner must be callable")
    if isinstance(spec.joiner, FieldMapping):
        spec.joiner.check_output(spec.into.value_type, where)
    for side, topic in (("left", spec.left), ("right", spec.right)):
        if not isinstance(topic, Topic):
            raise ConfigurationError(
                f"{where}: the {side} side must come from app.topic() or app.table()"
            )
    if isinstance(spec.left, Table) and not isinstance(spec.right, Table):
        raise ConfigurationError(
            f"{where}: the left side must be a stream (app.topic) when the right is one; "
            "a table on the left joins only a table"
        )
    if spec.how not in JOIN_KINDS:
        raise ConfigurationError(f"{where}: how={spec.how!r}; use one of {', '.join(JOIN_KINDS)}")
    if spec.is_global:
        if spec.how == "outer":
            raise ConfigurationError(f"{where}: a global-table join is inner or left, not outer")
        if spec.window is not None:
            raise ConfigurationError(f"{where}: a global-table join takes no window")
    elif spec.is_table_table:
        if spec.window is not None:
            raise ConfigurationError(f"{where}: a table-table join takes no window")
        if spec.has_versioned_table:
            raise ConfigurationError(
                f"{where}: a versioned table joins a stream (as of the stream record's time); "
                "join tables declared without versioned=True"
            )
    elif spec.is_stream_table:
        if spec.how == "outer":
            raise ConfigurationError(f"{where}: a stream-table join is inner or left, not outer")
        if spec.window is not None:
            raise ConfigurationError(f"{where}: a stream-table join takes no window")
    elif not isinstance(spec.window, JoinWindows):
        raise ConfigurationError(f"{where}: a stream-stream join needs window=JoinWindows(...)")
    if spec.left.name == spec.right.name:
        raise ConfigurationError(
            f"{where}: joining {spec.left.name!r} with itself is not supported"
        )
    if spec.into.name in spec.input_topics:
        raise ConfigurationError(f"{where}: the output topic {spec.into.name!r} is also an input")


def global_lookup(
    join: str, left: object, right: object, key: Callable[[Any], Any] | str | None
) -> KeyBy | None:
    """The global-table lookup of a join's `key=`, refusing it anywhere else."""
    where = f"join {join!r}"
    if isinstance(left, GlobalTable):
        raise ConfigurationError(
            f"{where}: global table {left.name!r} is on the left; a global table can only be "
            "the right side, joined by a stream"
        )
    if not isinstance(right, GlobalTable):
        if key is not None:
            raise ConfigurationError(
                f"{where}: key= applies only to a join with a global table (app.global_table)"
            )
        return None
    if isinstance(left, Table):
        raise ConfigurationError(
            f"{where}: global table {right.name!r} joins a stream (app.topic), not table "
            f"{left.name!r}"
        )
    if key is None:
        raise ConfigurationError(
            f"{where}: a join with global table {right.name!r} needs key=, a function of the "
            "stream value (or its field name) giving the table key to look up"
        )
    if not (callable(key) or (isinstance(key, str) and key)):
        raise ConfigurationError(
            f"{where}: key= takes a function of the stream value or a field name, got {key!r}"
        )
    return KeyBy(key, right.key_serde)
