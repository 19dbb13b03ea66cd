"""Stateless steps on a stream: filter, map_values, key_by, and running them on one record.

A chain of filter/map_values steps runs inside the task that reads the stream; `key_by` ends a
sub-topology at a repartition topic (see dsl/topology.py). Whatever a user's function raises,
and a key function returning None, becomes a `StepError`: the record is a bad record (dead
letter, or the worker stops under on_error="fail").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamjoin.dsl.serdes import Serde
from streamjoin.errors import StreamJoinError

__all__ = ("Filter", "KeyBy", "MapValues", "Step", "StepChain", "StepError")


class StepError(StreamJoinError):
    """A step's user function failed on a record (or a key function returned None)."""


@dataclass(frozen=True, slots=True, eq=False)
class Filter:
    """Keeps the records whose value `predicate` accepts."""

    predicate: Callable[[Any], Any]

    def describe(self) -> str:
        return f"filter({_function_name(self.predicate)})"


@dataclass(frozen=True, slots=True, eq=False)
class MapValues:
    """Replaces each value by `fn(value)`, serialised with `value_serde` from then on."""

    fn: Callable[[Any], Any]
    value_serde: Serde
    value_type: Any

    def describe(self) -> str:
        return f"map_values({_function_name(self.fn)})"


@dataclass(frozen=True, slots=True, eq=False)
class KeyBy:
    """A new key from each value: a function of the value, or the name of one of its fields.
    Compared by identity: one `key_by` used by two joins is one repartition topic."""

    key: Callable[[Any], Any] | str
    key_serde: Serde
    name: str | None = None
    partitions: int | None = None

    def describe(self) -> str:
        what = repr(self.key) if isinstance(self.key, str) else _function_name(self.key)
        return f"key_by({what})"

    def key_of(self, value: Any) -> Any:
        """The new key of a record with this value; StepError if there is none."""
        key = self.key
        try:
            if isinstance(key, str):
                found = value.get(key) if isinstance(value, dict) else getattr(value, key)
            else:
                found = key(value)
        except Exception as error:
            raise StepError(f"{self.describe()} raised {_named(error)}") from error
        if found is None:
            raise StepError(f"{self.describe()} returned None: a record needs a key to be joined")
        return found


Step = Filter | MapValues | KeyBy


class StepChain:
    """Filter and map_values steps run in order on a decoded value."""

    __slots__ = ("_decode", "_encode", "maps", "steps")

    def __init__(self, steps: tuple[Step, ...], input_serde: Serde, output_serde: Serde) -> None:
        """`input_serde` decodes the values read; `output_serde` encodes them after the steps."""
        if any(isinstance(step, KeyBy) for step in steps):
            raise ValueError("a key_by ends a sub-topology; it is not part of a step chain")
        self.steps = steps
        self.maps = any(isinstance(step, MapValues) for step in steps)
        """Whether the value changes (then it is serialised again after the chain)."""
        self._decode = input_serde.deserialize
        self._encode = output_serde.serialize

    def __bool__(self) -> bool:
        return bool(self.steps)

    def apply(self, raw: bytes | None) -> tuple[bool, Any, bytes | None]:
        """(kept, decoded value after the steps, its bytes) for a serialised value: the bytes
        read unless a map changed the value. SerdeError if it does not decode (or encode)."""
        value = None if raw is None else self._decode(raw)
        kept, value = self.run(value)
        if not kept or not self.maps:
            return kept, value, raw
        return True, value, None if value is None else self._encode(value)

    def run(self, value: Any) -> tuple[bool, Any]:
        """(kept, value after the steps); StepError if a user function raises."""
        for step in self.steps:
            try:
                if isinstance(step, Filter):
                    if not step.predicate(value):
                        return False, None
                else:
                    assert isinstance(step, MapValues)
                    value = step.fn(value)
            except Exception as error:
                raise StepError(f"{step.describe()} raised {_named(error)}") from error
        return True, value


def _function_name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def _named(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
