"""Canonical serialisation of ledger entries: one value, exactly one byte string.

A signature covers bytes, so the bytes of an entry must be a function of its content
alone. The encoding is JSON with sorted keys, no whitespace, UTF-8 (not ASCII escapes),
``allow_nan=False``, and every float written as its exact hexadecimal form
(:meth:`float.hex`) inside a tagged object ``{"$f": "0x1.999999999999ap-4"}``, so floats
round-trip bit for bit and never pass through a decimal printer. Keys starting with ``$``
are reserved for such tags. Decoding is strict: anything the encoder would not have
produced (a bare JSON number with a fraction, ``NaN``, a duplicate key, whitespace, a
different key order) is rejected, so two different byte strings never decode to the same
value.
"""

from __future__ import annotations

import enum
import json
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = ["CanonicalFormError", "canonical_dumps", "canonical_loads", "json_safe"]

_FLOAT_TAG = "$f"


class CanonicalFormError(ValueError):
    """Bytes that are not the canonical encoding of any value (internal to verification)."""


def _encode(value: Any, where: str) -> Any:
    # bool before int: bool is a subclass of int.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(
                f"{where} ({value!r}) must be a finite number; NaN and inf are not stored"
            )
        return {_FLOAT_TAG: float(value).hex()}
    if isinstance(value, str):
        return str.__str__(value)  # the plain text of a str subclass (an enum's value)
    if isinstance(value, list | tuple):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise ParameterTypeError(
                    f"{where} key ({key!r}) must be a str, not {type(key).__name__}"
                )
            if key.startswith("$"):
                raise ParameterError(f"{where} key ({key!r}) must not start with '$' (reserved)")
            out[str(key)] = _encode(v, f"{where}.{key}")
        return out
    raise ParameterTypeError(
        f"{where} ({value!r}) must be None, bool, int, float, str, list or dict, "
        f"not {type(value).__name__}"
    )


def canonical_dumps(value: Any, *, name: str = "value") -> bytes:
    """Encode ``value`` as canonical JSON bytes.

    Parameters
    ----------
    value : None, bool, int, float, str, list, tuple or dict with str keys (nested)
        Tuples are written as lists. Floats must be finite.
    name : str
        Used in error messages to locate the offending part.

    Raises
    ------
    ParameterError
        A float is NaN or infinite, a key starts with ``$``, or a string is not valid
        Unicode (a lone surrogate).
    ParameterTypeError
        A value of another type (convert it first with :func:`json_safe`).

    Examples
    --------
    >>> canonical_dumps({"b": 0.1, "a": [1, True, None]})
    b'{"a":[1,true,null],"b":{"$f":"0x1.999999999999ap-4"}}'
    """
    tree = _encode(value, name)
    text = json.dumps(
        tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ParameterError(
            f"{name} contains a string that is not valid Unicode ({exc.reason})"
        ) from None


def _decode_object(pairs: list[tuple[str, Any]]) -> Any:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise CanonicalFormError("duplicate key")
    if any(k.startswith("$") for k in keys):
        if len(pairs) != 1 or keys[0] != _FLOAT_TAG or not isinstance(pairs[0][1], str):
            raise CanonicalFormError("reserved key outside a float tag")
        try:
            number = float.fromhex(pairs[0][1])
        except (ValueError, OverflowError):
            raise CanonicalFormError("bad hexadecimal float") from None
        if not math.isfinite(number):
            raise CanonicalFormError("non-finite float")
        return number
    return dict(pairs)


def _reject_number(text: str) -> Any:
    raise CanonicalFormError(f"bare JSON number {text!r} (floats are tagged hex)")


def canonical_loads(data: bytes) -> Any:
    """Decode canonical bytes; raise :class:`CanonicalFormError` if they are not canonical.

    The value is decoded, re-encoded and compared byte for byte with ``data``.

    Examples
    --------
    >>> canonical_loads(canonical_dumps({"x": 0.1}))
    {'x': 0.1}
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CanonicalFormError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    try:
        text = data.decode("utf-8")
        value = json.loads(
            text,
            object_pairs_hook=_decode_object,
            parse_float=_reject_number,
            parse_constant=_reject_number,
        )
    except CanonicalFormError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CanonicalFormError(f"not valid UTF-8 JSON ({type(exc).__name__})") from None
    try:
        again = canonical_dumps(value)
    except (ParameterError, ParameterTypeError) as exc:
        raise CanonicalFormError(str(exc)) from None
    if again != data:
        raise CanonicalFormError("bytes differ from the canonical encoding of their value")
    return value


def json_safe(value: Any, *, name: str = "value") -> Any:
    """Convert common scientific-Python values into the types :func:`canonical_dumps` takes.

    numpy scalars become Python scalars, numpy arrays nested lists, enums their value,
    paths strings, and objects with a ``to_dict()`` method (``PrivacyBudget``,
    ``Guarantee``) their dictionary. NaN and infinities are rejected with an error naming
    the parameter.

    Raises
    ------
    ParameterError
        A float is NaN or infinite.
    ParameterTypeError
        A value that has no JSON form.
    """
    if value is None or isinstance(value, bool | str | int):
        if isinstance(value, enum.Enum):
            return value.value
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(
                f"{name} ({value!r}) must be a finite number; NaN and inf are not stored"
            )
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return json_safe(float(value), name=name)
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist(), name=name)
    if isinstance(value, enum.Enum):
        return json_safe(value.value, name=name)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise ParameterTypeError(
                    f"{name} key ({key!r}) must be a str, not {type(key).__name__}"
                )
            out[key] = json_safe(v, name=f"{name}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [json_safe(v, name=f"{name}[{i}]") for i, v in enumerate(value)]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return json_safe(to_dict(), name=name)
    raise ParameterTypeError(
        f"{name} ({value!r}) has no JSON form; pass a number, string, bool, None, list or dict, "
        f"not {type(value).__name__}"
    )
