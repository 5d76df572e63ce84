"""The shared parameter checks produce the one-line messages the CLI shows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_option,
    check_positive,
)
from ppdp.exceptions import ParameterError, ParameterTypeError


def test_epsilon_limits():
    assert check_epsilon("epsilon", 10) == 10.0
    with pytest.raises(
        ParameterError, match=r"epsilon \(10.5\) must be in \(0, 10\]; pass allow_large_epsilon"
    ):
        check_epsilon("epsilon", 10.5)
    assert check_epsilon("epsilon", 50.0, allow_large=True) == 50.0
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ParameterError):
            check_epsilon("epsilon", bad, allow_large=True)


def test_bool_and_numpy_bool_rejected():
    for bad in (True, np.bool_(True)):
        with pytest.raises(ParameterTypeError):
            check_positive("scale", bad)


def test_numpy_scalars_accepted():
    assert check_positive("scale", np.float32(0.5)) == 0.5
    assert check_int("k", np.int64(3), minimum=1) == 3


def test_delta_bounds():
    assert check_delta("delta", 0.0) == 0.0
    with pytest.raises(ParameterError, match=r"delta \(0.0\) must be in \(0, 1\)"):
        check_delta("delta", 0.0, allow_zero=False)
    with pytest.raises(ParameterError):
        check_delta("delta", 1.0)


def test_int_and_option():
    with pytest.raises(ParameterTypeError):
        check_int("k", 1.5)
    with pytest.raises(ParameterError, match=r"k \(0\) must be an integer >= 1"):
        check_int("k", 0, minimum=1)
    with pytest.raises(ParameterError, match="must be one of 'a', 'b'"):
        check_option("mode", "c", ("a", "b"))
