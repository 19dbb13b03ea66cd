"""Serdes: bytes, str, JSON, dataclasses and faust-streaming Records, and their errors."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import faust
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark import cloudpickle

from streamjoin.dsl.serdes import (
    BytesSerde,
    DataclassSerde,
    FaustRecordSerde,
    JsonSerde,
    SerdeError,
    StrSerde,
    decodes_immutable,
    serde_for,
)
from streamjoin.errors import ConfigurationError


@dataclass
class Click:
    auction_id: str
    timestamp_ms: int


class Impression(faust.Record, serializer="json"):
    auction_id: str
    campaign: str


def test_serde_for_each_declared_type() -> None:
    assert isinstance(serde_for(bytes), BytesSerde)
    assert isinstance(serde_for(str), StrSerde)
    assert isinstance(serde_for(dict), JsonSerde)
    assert isinstance(serde_for(Click), DataclassSerde)
    assert isinstance(serde_for(Impression), FaustRecordSerde)
    custom = StrSerde()
    assert serde_for(custom) is custom
    with pytest.raises(ConfigurationError, match="no serde for value type <class 'int'>"):
        serde_for(int)


def test_faust_records_read_what_faust_writes_and_back() -> None:
    serde = serde_for(Impression)
    written_by_faust = Impression("a1", "spring").dumps()
    decoded = serde.deserialize(written_by_faust)
    assert decoded == Impression("a1", "spring")
    assert Impression.loads(serde.serialize(decoded)) == decoded


def test_dataclass_round_trip_ignores_unknown_fields() -> None:
    serde = serde_for(Click)
    assert serde.deserialize(serde.serialize(Click("a", 5))) == Click("a", 5)
    assert serde.deserialize(b'{"auction_id":"a","timestamp_ms":5,"extra":1}') == Click("a", 5)


@pytest.mark.parametrize(
    ("value_type", "data", "message"),
    [
        (Click, b'{"auction_id": "a"}', "does not fit Click"),
        (Click, b"[1, 2]", "does not fit Click: Expected `object`, got `array`"),
        (
            Click,
            b'{"auction_id": "a", "timestamp_ms": "5"}',
            r"does not fit Click: Expected `int`, got `str` - at `\$.timestamp_ms`",
        ),
        (Click, b"{oops", "not JSON"),
        (Impression, b"[1, 2]", "expected a JSON object for Impression"),
        (Impression, b"{oops", "not JSON"),
        (str, b"\xff", "not UTF-8"),
        (dict, b"", "not JSON"),
        (dict, '{"a": 1}'.encode("utf-16"), "not JSON"),
    ],
)
def test_undecodable_input_raises_serde_error(
    value_type: object, data: bytes, message: str
) -> None:
    with pytest.raises(SerdeError, match=message):
        serde_for(value_type).deserialize(data)


def test_wrong_value_for_a_serde_raises_serde_error() -> None:
    with pytest.raises(SerdeError, match="expected Click, got dict"):
        serde_for(Click).serialize({"auction_id": "a"})
    with pytest.raises(SerdeError, match="str serde cannot encode int"):
        StrSerde().serialize(5)


@dataclass(frozen=True)
class FrozenClick:
    auction_id: str


def test_only_serdes_of_unchangeable_values_share_them() -> None:
    """Shared decoded values must not be changeable by one joiner call for the next."""
    shared = {t: decodes_immutable(serde_for(t)) for t in (bytes, str, FrozenClick)}
    copied = {t: decodes_immutable(serde_for(t)) for t in (dict, Click, Impression)}
    assert all(shared.values()) and not any(copied.values())
    assert not decodes_immutable(type("Custom", (), {"immutable": "yes"})())  # only a real True


def test_cycles_and_unencodable_values_raise_serde_error() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    for value in (cycle, {1j: 2}, object()):
        with pytest.raises(SerdeError, match="cannot encode as JSON"):
            JsonSerde().serialize(value)


class Opaque:
    """A type msgspec does not know."""


@dataclass
class WithOpaque:
    tag: str
    extra: Opaque


def test_fields_of_unknown_types_keep_their_json_value() -> None:
    decoded = serde_for(WithOpaque).deserialize(b'{"tag": "a", "extra": {"x": [1]}}')
    assert decoded == WithOpaque("a", {"x": [1]})  # type: ignore[arg-type]


def test_dataclass_with_unresolvable_annotations_still_decodes() -> None:
    @dataclass
    class Local:
        inner: Later  # type: ignore[name-defined]  # noqa: F821 - resolved nowhere

    assert serde_for(Local).deserialize(b'{"inner": 3, "other": 4}') == Local(3)


def test_post_init_errors_make_bad_records() -> None:
    @dataclass
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("n must not be negative")

    with pytest.raises(SerdeError, match="does not fit Positive: n must not be negative"):
        serde_for(Positive).deserialize(b'{"n": -1}')


def test_json_has_no_nan_or_infinity_so_they_encode_as_null() -> None:
    encoded = JsonSerde().serialize([float("nan"), float("inf"), -float("inf")])
    assert encoded == b"[null,null,null]"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children)
        | st.dictionaries(st.text(), children)
        | st.floats(allow_nan=False, allow_infinity=False)
    ),
    max_leaves=10,
)


@given(json_values)
def test_json_round_trip(value: object) -> None:
    serde = JsonSerde()
    assert serde.deserialize(serde.serialize(value)) == value


@pytest.mark.parametrize("value_type", [bytes, str, dict, Click, FrozenClick, Impression])
def test_serdes_pickle_as_spark_ships_them(value_type: type) -> None:
    serde = serde_for(value_type)
    by_cloudpickle = cloudpickle.dumps(serde)  # type: ignore[no-untyped-call]
    for shipped in (pickle.loads(pickle.dumps(serde)), cloudpickle.loads(by_cloudpickle)):
        assert type(shipped) is type(serde)
        assert shipped.name == serde.name
        assert decodes_immutable(shipped) == decodes_immutable(serde)
    data = serde.serialize(serde.deserialize(serde.serialize(_sample(value_type))))
    assert shipped.deserialize(data) == serde.deserialize(data)


def _sample(value_type: type) -> object:
    samples: dict[type, object] = {
        bytes: b"raw",
        str: "text",
        dict: {"a": [1, 2]},
        Click: Click("a", 5),
        FrozenClick: FrozenClick("a"),
        Impression: Impression("a1", "spring"),
    }
    return samples[value_type]
