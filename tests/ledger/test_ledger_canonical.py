"""Canonical serialisation: one value, one byte string, floats exact."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.ledger import canonical_dumps, canonical_loads, json_safe
from ppdp.ledger._canonical import CanonicalFormError

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(max_size=5).filter(lambda k: not k.startswith("$")), children, max_size=4
        )
    ),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_is_exact(value):
    data = canonical_dumps(value)
    back = canonical_loads(data)
    assert canonical_dumps(back) == data
    assert _same(back, value)


def _same(a, b) -> bool:
    if isinstance(b, float):
        # bit-for-bit, so -0.0 and 0.0 differ
        return isinstance(a, float) and struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, list | tuple):
        return isinstance(a, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def test_key_order_does_not_matter():
    a = {"b": 1, "a": {"y": 0.5, "x": [1, 2]}, "c": "é"}
    b = {"c": "é", "a": {"x": [1, 2], "y": 0.5}, "b": 1}
    assert canonical_dumps(a) == canonical_dumps(b)
    assert (
        canonical_dumps(a)
        == '{"a":{"x":[1,2],"y":{"$f":"0x1.0000000000000p-1"}},"b":1,"c":"é"}'.encode()
    )


@pytest.mark.parametrize(
    "x", [0.1, 1 / 3, 5e-324, 1.7976931348623157e308, -0.0, 2.0**-1074, 1e-300]
)
def test_floats_are_written_in_hex_and_read_back_bit_for_bit(x):
    data = canonical_dumps({"x": x})
    assert data == b'{"x":{"$f":"' + x.hex().encode() + b'"}}'
    assert struct.pack("<d", canonical_loads(data)["x"]) == struct.pack("<d", x)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_are_rejected(bad):
    with pytest.raises(ParameterError, match="finite"):
        canonical_dumps({"v": [1, bad]})
    with pytest.raises(ParameterError, match=r"details\.v"):
        json_safe({"v": np.float64(bad)}, name="details")


@pytest.mark.parametrize(
    "value, error",
    [
        ({"$f": "0x1p0"}, ParameterError),  # reserved key
        ({1: "a"}, ParameterTypeError),
        ({"a": object()}, ParameterTypeError),
        ({"a": b"bytes"}, ParameterTypeError),
        ({"a": "\ud800"}, ParameterError),  # lone surrogate
    ],
)
def test_unencodable_values_are_refused(value, error):
    with pytest.raises(error):
        canonical_dumps(value)


@pytest.mark.parametrize(
    "data",
    [
        b'{"b":1,"a":2}',  # key order
        b'{"a": 2}',  # whitespace
        b'{"a":2.5}',  # bare float
        b'{"a":NaN}',
        b'{"a":1,"a":1}',  # duplicate key
        b'{"a":{"$f":"nan"}}',
        b'{"a":{"$f":"0x1.8p+0","b":1}}',
        b'{"a":{"$f":"0x1.80p+0"}}',  # not the canonical hex form
        b'{"a":"\\u00e9"}',  # ASCII escape instead of UTF-8
        b"\xff",
        b'{"a":-0}',
        b'{"a":1e5}',
    ],
)
def test_non_canonical_bytes_are_rejected(data):
    with pytest.raises(CanonicalFormError):
        canonical_loads(data)


def test_json_safe_converts_scientific_python_values(tmp_path):
    out = json_safe(
        {
            "i": np.int64(3),
            "f": np.float32(0.5),
            "b": np.bool_(True),
            "a": np.arange(3),
            "rel": Neighbouring.ADD_REMOVE,
            "p": tmp_path,
            "budget": PrivacyBudget(1.0, 1e-6),
            "t": (1, 2),
        }
    )
    assert out == {
        "i": 3,
        "f": 0.5,
        "b": True,
        "a": [0, 1, 2],
        "rel": "add/remove",
        "p": str(tmp_path),
        "budget": {"epsilon": 1.0, "delta": 1e-6},
        "t": [1, 2],
    }
    assert type(out["i"]) is int and type(out["f"]) is float and type(out["b"]) is bool
    canonical_dumps(out)
