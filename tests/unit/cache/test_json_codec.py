"""The cache's JSON: orjson where it takes the text or value, the standard library where it does not."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.cache.json_codec import dumps, loads

#: Values as decoded JSON holds them (integers within 64 bits, as any API server writes; finite floats).
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=_JSON)
def test_what_is_encoded_decodes_to_the_same_value_as_the_standard_library_reads_it(value: Any) -> None:
    text = dumps(value)
    assert loads(text) == value
    assert json.loads(text) == value


def test_the_text_is_compact_and_keeps_the_key_order() -> None:
    """The store compares pods by this text and keys templates by it: one value, one text."""
    value = {"spec": {"b": 1, "a": [1, 2.5, None, True]}, "status": {"phase": "Running"}}
    assert dumps(value) == b'{"spec":{"b":1,"a":[1,2.5,null,true]},"status":{"phase":"Running"}}'
    assert dumps(value) == dumps(json.loads(json.dumps(value)))


def test_an_integer_beyond_64_bits_is_encoded_by_the_standard_library() -> None:
    assert dumps({"priority": 2**70}) == b'{"priority":1180591620717411303424}'


def test_a_value_json_cannot_hold_is_encoded_as_its_text() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert dumps({"x": Odd()}) == b'{"x":"odd"}'


def test_nan_and_infinity_which_orjson_refuses_are_read_as_the_standard_library_reads_them() -> None:
    decoded = loads(b'{"a":NaN,"b":Infinity}')
    assert math.isnan(decoded["a"]) and decoded["b"] == math.inf


def test_text_neither_reads_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        loads(b'{"a":')
