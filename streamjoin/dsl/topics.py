"""The topics a join reads and writes, with the serdes of their keys and values, and the streams
derived from them by stateless steps (filter, map_values, key_by)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamjoin.dsl.serdes import Serde, serde_for
from streamjoin.dsl.steps import Filter, KeyBy, MapValues, Step
from streamjoin.errors import ConfigurationError

__all__ = ("GlobalTable", "Stream", "Table", "Topic", "make_topic")


class _Composable:
    """`filter`, `map_values` and `key_by`: each returns a new stream; they compose."""

    __slots__ = ()

    def filter(self, predicate: Callable[[Any], Any]) -> Stream:
        """Keep the records whose value `predicate` accepts (runs in the task reading them)."""
        _check_callable(predicate, "filter")
        return Stream(self._stream_base("filter"), Filter(predicate))

    def map_values(self, fn: Callable[[Any], Any], *, value_type: Any = None) -> Stream:
        """Replace each value by `fn(value)`; `value_type` is the type `fn` returns (default: the
        value type stays), which decides how the value is serialised from then on."""
        _check_callable(fn, "map_values")
        base = self._stream_base("map_values")
        if value_type is None:
            return Stream(base, MapValues(fn, base.value_serde, base.value_type))
        return Stream(base, MapValues(fn, serde_for(value_type), value_type))

    def key_by(
        self,
        key: Callable[[Any], Any] | str,
        *,
        name: str | None = None,
        partitions: int | None = None,
        key_type: Any = str,
    ) -> Stream:
        """Re-key the stream by `key(value)` or by the value's field named `key`, through the
        repartition topic `<app_id>-<name>-repartition` (name derived from the join and side
        when not given) with the partition count of the other join input, or `partitions`."""
        if not (callable(key) or (isinstance(key, str) and key)):
            raise ConfigurationError(
                f"key_by takes a function of the value or a field name, got {key!r}"
            )
        if partitions is not None and (isinstance(partitions, bool) or partitions < 1):
            raise ConfigurationError(
                f"key_by: partitions must be a positive int, got {partitions!r}"
            )
        return Stream(
            self._stream_base("key_by"), KeyBy(key, serde_for(key_type), name, partitions)
        )

    def _stream_base(self, step: str) -> Topic | Stream:
        if isinstance(self, Table):
            raise ConfigurationError(
                f"table {self.name!r}: {step} applies to streams (app.topic), not to tables"
            )
        assert isinstance(self, Topic | Stream)
        return self


def _check_callable(fn: Any, step: str) -> None:
    if not callable(fn):
        raise ConfigurationError(f"{step} takes a function of the value, got {fn!r}")


@dataclass(frozen=True, slots=True)
class Topic(_Composable):
    """A stream of records. `partitions` is required only for topics streamjoin creates."""

    name: str
    key_serde: Serde = field(compare=False)
    value_serde: Serde = field(compare=False)
    value_type: Any = field(default=None, compare=False)
    partitions: int | None = None


@dataclass(frozen=True, slots=True)
class Table(Topic):
    """A compacted topic read as a table: the latest value per key, materialised in a store.
    Versioned: every value of a key for `history_ms` behind the latest timestamp, so that a
    stream record joins the value valid at its own timestamp."""

    versioned: bool = field(default=False, compare=False)
    history_ms: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class GlobalTable(Table):
    """A table every worker holds whole (all partitions), as Kafka Streams' GlobalKTable: a
    stream joins it by a key taken from its values, without co-partitioning."""


@dataclass(frozen=True, slots=True, eq=False)
class Stream(_Composable):
    """A topic after stateless steps; usable wherever a topic is a join input."""

    upstream: Topic | Stream
    step: Step

    @property
    def source(self) -> Topic:
        """The declared topic the chain starts from."""
        upstream = self.upstream
        return upstream if isinstance(upstream, Topic) else upstream.source

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every step from the source topic on, in order."""
        upstream = self.upstream
        before = () if isinstance(upstream, Topic) else upstream.steps
        return (*before, self.step)

    @property
    def value_serde(self) -> Serde:
        step = self.step
        return step.value_serde if isinstance(step, MapValues) else self.upstream.value_serde

    @property
    def value_type(self) -> Any:
        step = self.step
        return step.value_type if isinstance(step, MapValues) else self.upstream.value_type

    @property
    def key_serde(self) -> Serde:
        step = self.step
        return step.key_serde if isinstance(step, KeyBy) else self.upstream.key_serde

    def __repr__(self) -> str:
        return ".".join([f"Stream({self.source.name!r})", *(s.describe() for s in self.steps)])


def make_topic(
    cls: type[Topic], name: str, value_type: Any, key_type: Any, partitions: int | None
) -> Topic:
    if not name or not isinstance(name, str):
        raise ConfigurationError(f"a topic needs a non-empty name, got {name!r}")
    if partitions is not None and (isinstance(partitions, bool) or partitions < 1):
        raise ConfigurationError(
            f"topic {name!r}: partitions must be a positive int, got {partitions!r}"
        )
    return cls(name, serde_for(key_type), serde_for(value_type), value_type, partitions)
