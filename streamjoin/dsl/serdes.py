"""Serialisers for keys and values: bytes, str, JSON, dataclasses and faust-streaming Records.

A value that fails to decode raises `SerdeError`, which the worker routes to the dead-letter
topic with the source offset instead of crashing.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

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


def _encode_other(value: Any) -> Any:
    """What msgspec cannot encode by itself: faust Records, as the dict of their fields."""
    if is_faust_record(type(value)):
        return value.asdict()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


_encoder = msgspec.json.Encoder(enc_hook=_encode_other)
"""msgspec's C encoder writes dicts, lists, scalars and dataclasses (nested too) without a
Python call per field: a small record encodes about 5x faster than with `json`. NaN and
infinities become null (JSON has no such numbers)."""


def _json_dumps(value: Any) -> bytes:
    try:
        return _encoder.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise SerdeError(f"cannot encode as JSON: {exc}") from None


def _json_loads(data: bytes) -> Any:
    """JSON text in UTF-8 (RFC 8259 allows no other encoding between systems)."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
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
    from the instance (nested dataclasses and Records are encoded as objects too)."""

    def __init__(self, cls: type, build: Callable[[dict[str, Any]], Any]) -> None:
        self.cls = cls
        self.name = f"json:{cls.__module__}.{cls.__qualname__}"
        self.immutable = False
        self._build = build

    def __reduce__(self) -> tuple[type, tuple[type]]:
        """Pickled as its class and value type (Spark ships serdes to its workers): msgspec's
        decoder and a compiled closure cannot be pickled, and both are rebuilt from the type."""
        return type(self), (self.cls,)

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, self.cls):
            raise SerdeError(f"expected {self.cls.__name__}, got {type(value).__name__}")
        return _json_dumps(value)

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


def _checked_decoder(cls: type) -> msgspec.json.Decoder[Any] | None:
    """msgspec's decoder for `cls`, or None when it could not check every field: annotations
    that do not resolve (a class local to a function), or a type it does not know."""
    try:
        info = msgspec.inspect.type_info(cls)
    except (NameError, TypeError):
        return None
    seen: set[int] = set()
    unvisited: list[Any] = [info]
    while unvisited:
        node = unvisited.pop()
        if isinstance(node, msgspec.inspect.CustomType):
            return None
        if isinstance(node, tuple):
            unvisited.extend(node)
        elif isinstance(node, msgspec.Struct) and id(node) not in seen:
            seen.add(id(node))
            unvisited.extend(getattr(node, name) for name in node.__struct_fields__)
    return msgspec.json.Decoder(cls)


class DataclassSerde(_ObjectSerde):
    """Decoded by msgspec straight from the JSON text into the dataclass (about 5x faster than
    `json` plus the constructor), checking every field against its annotation: a value of the
    wrong type is a bad record whose error names the field. Unknown fields are ignored, missing
    ones take their defaults, `__post_init__` runs. A dataclass whose annotations cannot be
    resolved (a class local to a function), or with a field of a type msgspec does not know, is
    built from the decoded dict, unchecked, as before."""

    def __init__(self, cls: type) -> None:
        names = frozenset(f.name for f in dataclasses.fields(cls))

        def build(fields: dict[str, Any]) -> Any:
            if fields.keys() <= names:
                return cls(**fields)
            return cls(**{k: v for k, v in fields.items() if k in names})

        super().__init__(cls, build)
        params = getattr(cls, "__dataclass_params__", None)
        self.immutable = params is not None and params.frozen is True
        self._checked = _checked_decoder(cls)

    def deserialize(self, data: bytes) -> Any:
        if self._checked is None:
            return super().deserialize(data)
        try:
            return self._checked.decode(data)
        except msgspec.ValidationError as exc:
            raise SerdeError(f"does not fit {self.cls.__name__}: {exc}") from None
        except msgspec.DecodeError as exc:
            raise SerdeError(f"not JSON: {exc}") from None


class FaustRecordSerde(_ObjectSerde):
    """faust-streaming Records as faust writes them (JSON; its `__faust` metadata is ignored)."""

    def __init__(self, cls: type) -> None:
        def build(fields: dict[str, Any]) -> Any:
            fields.pop("__faust", None)
            return cls(**fields)

        super().__init__(cls, build)


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
