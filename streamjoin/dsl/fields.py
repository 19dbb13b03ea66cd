"""Declarative joiners: the output value as named fields of the two sides, instead of a function.

    attribute = app.join(impressions, clicks, window=..., how="left", into=out, name="attribute")(
        fields(
            auction=left("auction_id"),
            clicked=matched("right"),
            delay_ms=right("ts", int) - left("ts", int),
        )
    )

A `FieldMapping` is callable like any joiner, so the streaming worker runs it unchanged, and it
is plain data, so the Spark engine compiles it to native columns instead of calling Python per
row. Both evaluate with SQL's null rules: a field of a missing side, a missing field, and any
arithmetic on a null are null, so the two engines give the same values.
"""

from __future__ import annotations

import dataclasses
import typing
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from streamjoin.errors import ConfigurationError

__all__ = (
    "FIELD_TYPES",
    "Arithmetic",
    "Coalesce",
    "Constant",
    "Expression",
    "Field",
    "FieldMapping",
    "FieldType",
    "Matched",
    "SideName",
    "coalesce",
    "declared_type",
    "fields",
    "left",
    "lit",
    "matched",
    "right",
)

SideName = Literal["left", "right"]
FieldType = type[int] | type[float] | type[str] | type[bool]
FIELD_TYPES: tuple[FieldType, ...] = (int, float, str, bool)
_OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


class Expression(ABC):
    """Something a field mapping computes from the left and right values."""

    @abstractmethod
    def evaluate(self, left_value: Any, right_value: Any) -> Any:
        """The value for one pair (either side may be None), with SQL's null rules."""

    def __add__(self, other: Expression | int | float) -> Arithmetic:
        return Arithmetic("+", self, _expression(other))

    def __sub__(self, other: Expression | int | float) -> Arithmetic:
        return Arithmetic("-", self, _expression(other))

    def __mul__(self, other: Expression | int | float) -> Arithmetic:
        return Arithmetic("*", self, _expression(other))


@dataclass(frozen=True, slots=True, eq=False)
class Field(Expression):
    """A field of one side's value; `path` may be dotted for nested objects. `type` is needed
    by Spark when the side's value type (e.g. plain JSON dicts) does not declare it."""

    side: SideName
    path: str
    type: FieldType | None = None

    def evaluate(self, left_value: Any, right_value: Any) -> Any:
        value = left_value if self.side == "left" else right_value
        for part in self.path.split("."):
            if value is None:
                return None
            value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
        return value


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expression):
    value: int | float | str | bool | None

    def evaluate(self, left_value: Any, right_value: Any) -> Any:
        return self.value


@dataclass(frozen=True, slots=True, eq=False)
class Matched(Expression):
    """True when the join result has a record of `side` (false for the other side's
    non-matches of a left or outer join)."""

    side: SideName

    def evaluate(self, left_value: Any, right_value: Any) -> bool:
        return (left_value if self.side == "left" else right_value) is not None


@dataclass(frozen=True, slots=True, eq=False)
class Arithmetic(Expression):
    operator: Literal["+", "-", "*"]
    first: Expression
    second: Expression

    def evaluate(self, left_value: Any, right_value: Any) -> Any:
        a = self.first.evaluate(left_value, right_value)
        b = self.second.evaluate(left_value, right_value)
        if a is None or b is None:
            return None
        return _OPERATORS[self.operator](a, b)


@dataclass(frozen=True, slots=True, eq=False)
class Coalesce(Expression):
    """The first of its expressions that is not null."""

    options: tuple[Expression, ...]

    def evaluate(self, left_value: Any, right_value: Any) -> Any:
        for option in self.options:
            value = option.evaluate(left_value, right_value)
            if value is not None:
                return value
        return None


def _expression(value: Expression | int | float | str | bool | None) -> Expression:
    if isinstance(value, Expression):
        return value
    if value is None or isinstance(value, int | float | str | bool):
        return Constant(value)
    raise ConfigurationError(
        f"field mapping: {value!r} is neither an expression nor an int, float, str or bool"
    )


def _field(side: SideName, path: str, as_type: FieldType | None) -> Field:
    if not isinstance(path, str) or not all(path.split(".")):
        raise ConfigurationError(f"{side}({path!r}): a field name must be a non-empty string")
    if as_type is not None and as_type not in FIELD_TYPES:
        raise ConfigurationError(
            f"{side}({path!r}, {as_type!r}): the type must be int, float, str or bool"
        )
    return Field(side, path, as_type)


def left(path: str, as_type: FieldType | None = None) -> Field:
    """A field of the left value, e.g. left("auction_id") or left("ts", int)."""
    return _field("left", path, as_type)


def right(path: str, as_type: FieldType | None = None) -> Field:
    """A field of the right value (null in a left join's non-matches)."""
    return _field("right", path, as_type)


def lit(value: int | float | str | bool | None) -> Expression:
    """A constant."""
    return _expression(value)


def matched(side: SideName) -> Matched:
    """Whether the result has a record of `side`: "left" or "right"."""
    if side not in ("left", "right"):
        raise ConfigurationError(f"matched({side!r}): use 'left' or 'right'")
    return Matched(side)


def coalesce(*options: Expression | int | float | str | bool) -> Coalesce:
    """The first non-null of `options`, e.g. coalesce(right("price", float), 0.0)."""
    if not options:
        raise ConfigurationError("coalesce() needs at least one expression")
    return Coalesce(tuple(_expression(option) for option in options))


@dataclass(frozen=True, slots=True, eq=False)
class FieldMapping:
    """Output field name -> expression, in output order. Called as a joiner it returns a dict,
    or an instance of `output_type` (a dataclass or faust.Record) when one is given."""

    outputs: tuple[tuple[str, Expression], ...]
    output_type: type | None = None

    def __call__(self, left_value: Any, right_value: Any) -> Any:
        values = {name: e.evaluate(left_value, right_value) for name, e in self.outputs}
        return values if self.output_type is None else self.output_type(**values)

    def check_output(self, value_type: Any, where: str) -> None:
        """Refuse an output topic whose serde could not write what this mapping returns."""
        if value_type in (bytes, str):
            raise ConfigurationError(
                f"{where}: a field mapping builds JSON objects, but the output topic's values "
                f"are {value_type.__name__}; declare it with value_type=dict or a dataclass"
            )
        if _declared_fields(value_type) is not None and self.output_type is not value_type:
            raise ConfigurationError(
                f"{where}: the output topic's values are {value_type.__name__}; build them "
                f"with fields({value_type.__name__}, ...)"
            )

    def referenced(self) -> list[Field]:
        """Every field of either side the mapping reads."""
        found: list[Field] = []
        pending: list[Expression] = [e for _, e in self.outputs]
        while pending:
            expression = pending.pop()
            if isinstance(expression, Field):
                found.append(expression)
            elif isinstance(expression, Arithmetic):
                pending += (expression.first, expression.second)
            elif isinstance(expression, Coalesce):
                pending += expression.options
        return found


def fields(
    output_type: type | None = None, /, **outputs: Expression | int | float | str | bool
) -> FieldMapping:
    """A declarative joiner: `fields(name=expression, ...)`, optionally building `output_type`
    (a dataclass or faust.Record whose fields are exactly the names given)."""
    if not outputs:
        raise ConfigurationError("fields() needs at least one output field, e.g. id=left('id')")
    if output_type is not None:
        names = _declared_fields(output_type)
        if names is None:
            raise ConfigurationError(
                f"fields({output_type!r}, ...): the output type must be a dataclass or a "
                "faust.Record"
            )
        if set(names) != set(outputs):
            raise ConfigurationError(
                f"fields({output_type.__name__}, ...) must give exactly its fields "
                f"{sorted(names)}; got {sorted(outputs)}"
            )
    return FieldMapping(tuple((n, _expression(e)) for n, e in outputs.items()), output_type)


def _declared_fields(cls: Any) -> dict[str, Any] | None:
    """Field name -> annotation of a dataclass or faust.Record, else None."""
    if not isinstance(cls, type):
        return None
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        return {f.name: hints.get(f.name) for f in dataclasses.fields(cls)}
    record_fields = getattr(getattr(cls, "_options", None), "fields", None)
    if isinstance(record_fields, Mapping):
        return dict(record_fields)
    return None


def declared_type(value_type: Any, path: str) -> FieldType | None:
    """The type a dataclass or faust.Record value type declares for a (dotted) field path:
    int, float, str or bool (Optional unwrapped), else None."""
    annotation: Any = value_type
    for part in path.split("."):
        declared = _declared_fields(annotation)
        if declared is None or part not in declared:
            return None
        annotation = _unwrap_optional(declared[part])
    return annotation if annotation in FIELD_TYPES else None


def _unwrap_optional(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(args) == 1 and type(None) in typing.get_args(annotation):
        return args[0]
    return annotation
