"""Serialisers for keys and values: bytes, str, JSON, dataclasses and faust-streaming Records.

A value that fails to decode raises `SerdeError`, which the worker routes to the dead-letter
topic with the source offset instead of crashing.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Protocol

from streamjoin.errors import ConfigurationError, StreamJoinError

__all__ = (
    "BytesSerde",
    "DataclassSerde",
    "FaustRecordSerde",
    "JsonSerde",
    "Serde",
    "SerdeError",
    "StrSerde",
    "decodes_immutable",
    "is_faust_record",
    "serde_for",
)


class SerdeError(StreamJoinError):
    """Bytes that do not decode, or a value that does not encode, with the chosen serde."""


class Serde(Protocol):
    name: str

    def serialize(self, value: Any) -> bytes: ...

    def deserialize(self, data: bytes) -> Any: ...


def decodes_immutable(serde: Serde) -> bool:
    """True when the values `serde` decodes cannot be changed (bytes, str, frozen dataclasses):
    one decoded value may then be handed to several joiner calls instead of decoding it again
    for each. A serde says so with a true `immutable` attribute; others are assumed mutable."""
    return getattr(serde, "immutable", False) is True


class BytesSerde:
    name = "bytes"
    immutable = True

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise SerdeError(f"bytes serde cannot encode {type(value).__name__}")
        return bytes(value)

    def deserialize(self, data: bytes) -> bytes:
        return data


class StrSerde:
    name = "str"
    immutable = True

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise SerdeError(f"str serde cannot encode {type(value).__name__}")
        return value.encode()

    def deserialize(self, data: bytes) -> str:
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            raise SerdeError(f"not UTF-8: {exc}") from None


def _to_jsonable(value: Any) -> Any:
    """A dataclass or Record as a dict of its fields, one level deep: the encoder calls this
    again for any nested one (cheaper than `dataclasses.asdict`'s deep copy)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if is_faust_record(type(value)):
        return value.asdict()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


_encode_chunks = c_make_encoder(
    None, _to_jsonable, encode_basestring_ascii, None, ":", ",", False, False, True
)
"""CPython's C JSON encoder, made once: `json.dumps` and `JSONEncoder.encode` make a new one
for every call, which was half the cost of encoding a small record. Its arguments: no
circular-reference markers (a cycle ends in RecursionError), `default`, ASCII output, no
indent, compact separators, keys unsorted, no key skipping, NaN allowed (as `json.dumps`)."""


def _json_dumps(value: Any) -> bytes:
    try:
        return "".join(_encode_chunks(value, 0)).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise SerdeError(f"cannot encode as JSON: {exc}") from None


def _json_loads(data: bytes) -> Any:
    """JSON text in UTF-8 (RFC 8259 allows no other encoding between systems); decoding the
    bytes first is a third faster than letting `json.loads` detect their encoding."""
    try:
        return json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise SerdeError(f"not JSON: {exc}") from None


class JsonSerde:
    """JSON for dicts, lists and scalars; dataclasses and Records inside are written as objects."""

    name = "json"

    def serialize(self, value: Any) -> bytes:
        return _json_dumps(value)

    def deserialize(self, data: bytes) -> Any:
        return _json_loads(data)


class _ObjectSerde:
    """JSON objects decoded into instances of one class through `build(fields)`, and encoded
    from `fields_of(instance)` (nested dataclasses and Records are encoded as objects too)."""

    def __init__(
        self,
        cls: type,
        build: Callable[[dict[str, Any]], Any],
        fields_of: Callable[[Any], dict[str, Any]],
    ) -> None:
        self.cls = cls
        self.name = f"json:{cls.__module__}.{cls.__qualname__}"
        self.immutable = False
        self._build = build
        self._fields_of = fields_of

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, self.cls):
            raise SerdeError(f"expected {self.cls.__name__}, got {type(value).__name__}")
        return _json_dumps(self._fields_of(value))

    def deserialize(self, data: bytes) -> Any:
        fields = _json_loads(data)
        if not isinstance(fields, dict):
            raise SerdeError(
                f"expected a JSON object for {self.cls.__name__}, got {type(fields).__name__}"
            )
        try:
            return self._build(fields)
        except (TypeError, ValueError) as exc:
            raise SerdeError(f"does not fit {self.cls.__name__}: {exc}") from None


class DataclassSerde(_ObjectSerde):
    def __init__(self, cls: type) -> None:
        ordered = tuple(f.name for f in dataclasses.fields(cls))
        names = frozenset(ordered)

        def build(fields: dict[str, Any]) -> Any:
            if fields.keys() <= names:
                return cls(**fields)
            return cls(**{k: v for k, v in fields.items() if k in names})

        def fields_of(value: Any) -> dict[str, Any]:
            return {name: getattr(value, name) for name in ordered}

        super().__init__(cls, build, fields_of)
        params = getattr(cls, "__dataclass_params__", None)
        self.immutable = params is not None and params.frozen is True


class FaustRecordSerde(_ObjectSerde):
    """faust-streaming Records as faust writes them (JSON; its `__faust` metadata is ignored)."""

    def __init__(self, cls: type) -> None:
        def build(fields: dict[str, Any]) -> Any:
            fields.pop("__faust", None)
            return cls(**fields)

        super().__init__(cls, build, lambda record: record.asdict())


def is_faust_record(cls: type) -> bool:
    """True for faust.Record subclasses; never imports faust when the user has not."""
    faust = sys.modules.get("faust")
    record = getattr(faust, "Record", None) if faust else None
    return isinstance(cls, type) and record is not None and issubclass(cls, record)


def serde_for(value_type: Any) -> Serde:
    """The serde for a declared key or value type (or a Serde given as is)."""
    if value_type is None or value_type is dict or value_type is list:
        return JsonSerde()
    if value_type is bytes:
        return BytesSerde()
    if value_type is str:
        return StrSerde()
    if isinstance(value_type, type):
        if is_faust_record(value_type):
            return FaustRecordSerde(value_type)
        if dataclasses.is_dataclass(value_type):
            return DataclassSerde(value_type)
    elif hasattr(value_type, "serialize") and hasattr(value_type, "deserialize"):
        serde: Serde = value_type
        return serde
    raise ConfigurationError(
        f"no serde for value type {value_type!r}: use bytes, str, dict (JSON), a dataclass, "
        "a faust.Record subclass, or an object with serialize()/deserialize()"
    )
