"""A declarative field mapping (streamjoin.dsl.fields) as native Spark columns.

The side values are parsed with `from_json` into just the fields the mapping reads, typed from
the mapping (`left("ts", int)`) or from the side's dataclass/faust.Record annotations; the output
is `to_json` of the named results, nulls kept, as the Python serdes write them.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from streamjoin.dsl.fields import (
    Arithmetic,
    Coalesce,
    Constant,
    Expression,
    Field,
    FieldMapping,
    FieldType,
    Matched,
    SideName,
    declared_type,
)
from streamjoin.dsl.serdes import DataclassSerde, FaustRecordSerde, JsonSerde
from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError

__all__ = ("mapping_value",)

_SPARK_TYPES: dict[FieldType, DataType] = {
    int: LongType(),
    float: DoubleType(),
    str: StringType(),
    bool: BooleanType(),
}
_JSON_SERDES = (JsonSerde, DataclassSerde, FaustRecordSerde)

_Tree = dict[str, "DataType | _Tree"]


def _field_type(spec: JoinSpec, field: Field) -> FieldType:
    topic = spec.left if field.side == "left" else spec.right
    found = field.type or declared_type(topic.value_type, field.path)
    if found is None:
        raise ConfigurationError(
            f"join {spec.name!r}: Spark needs the type of {field.side}({field.path!r}); "
            f"write {field.side}({field.path!r}, int) (or float, str, bool), or give "
            f"{topic.name!r} a dataclass value type"
        )
    return found


def _schema(tree: _Tree) -> StructType:
    return StructType(
        [
            StructField(name, _schema(node) if isinstance(node, dict) else node)
            for name, node in tree.items()
        ]
    )


def _side_schemas(spec: JoinSpec, mapping: FieldMapping) -> dict[SideName, StructType]:
    trees: dict[SideName, _Tree] = {"left": {}, "right": {}}
    for field in mapping.referenced():
        topic = spec.left if field.side == "left" else spec.right
        if not isinstance(topic.value_serde, _JSON_SERDES):
            raise ConfigurationError(
                f"join {spec.name!r}: a field mapping reads JSON objects, but {topic.name!r} "
                f"has {topic.value_serde.name} values; use a joiner function instead"
            )
        spark_type = _SPARK_TYPES[_field_type(spec, field)]
        *parents, leaf = field.path.split(".")
        node = trees[field.side]
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigurationError(
                    f"join {spec.name!r}: {field.side} field {part!r} is used both as a value "
                    "and as an object"
                )
            node = child
        known = node.setdefault(leaf, spark_type)
        if known != spark_type:
            raise ConfigurationError(
                f"join {spec.name!r}: {field.side}({field.path!r}) is given two types"
            )
    return {side: _schema(tree) for side, tree in trees.items()}


def _column(expression: Expression, parsed: dict[SideName, Column]) -> Column:
    if isinstance(expression, Field):
        column = parsed[expression.side]
        for part in expression.path.split("."):
            column = column.getField(part)
        return column
    if isinstance(expression, Constant):
        return sf.lit(expression.value)
    if isinstance(expression, Matched):
        return sf.col(f"{expression.side}_source").isNotNull()
    if isinstance(expression, Arithmetic):
        a, b = _column(expression.first, parsed), _column(expression.second, parsed)
        return (
            a + b if expression.operator == "+" else a - b if expression.operator == "-" else a * b
        )
    if isinstance(expression, Coalesce):
        return sf.coalesce(*(_column(option, parsed) for option in expression.options))
    raise ConfigurationError(f"Spark cannot compile the field expression {expression!r}")


def mapping_value(spec: JoinSpec, mapping: FieldMapping) -> Column:
    """The output value (JSON bytes) of `mapping` over JOINED_COLUMNS rows."""
    schemas = _side_schemas(spec, mapping)
    parsed: dict[SideName, Column] = {
        side: sf.from_json(sf.col(f"{side}_value").cast("string"), schema)
        for side, schema in schemas.items()
    }
    named = [_column(expression, parsed).alias(name) for name, expression in mapping.outputs]
    return sf.to_json(sf.struct(*named), {"ignoreNullFields": "false"}).cast("binary")
