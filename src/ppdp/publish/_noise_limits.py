"""Refuse, before the spend, an ε whose noise the samplers cannot draw (RELIABILITY.md (c)).

A publisher builds its mechanisms in ``_validate_params``, from its parameters alone; a
mechanism whose noise scale exceeds what :mod:`ppdp.noise` draws exactly raises
:class:`~ppdp.mechanisms.grid.UndrawableNoiseError`. :func:`planned_charges` turns that into
one line naming the publisher, the noise, the sampler's limit and the smallest ε that
works (found by re-planning a copy of the publisher at other ε; nothing is drawn).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from ppdp._params import FIT_PARAMS_KEY
from ppdp.exceptions import ParameterError
from ppdp.mechanisms.grid import UndrawableNoiseError, too_small_epsilon

__all__ = ["epsilon_that_clears", "planned_charges"]

T = TypeVar("T")


def planned_charges(publisher: Any, n_rows: int | None, plan: Callable[[Any, int | None], T]) -> T:
    """``plan(publisher, n_rows)``, with an undrawable noise refused in one line.

    ``plan`` is the publisher's own planning function (unbound), so that the smallest
    workable ε is found by running it on copies of the publisher at other ε.
    """
    try:
        return plan(publisher, n_rows)
    except UndrawableNoiseError as exc:
        error = exc

    def feasible(epsilon: float) -> bool:
        trial = copy.copy(publisher)
        trial.__dict__.pop(FIT_PARAMS_KEY, None)
        trial.epsilon = epsilon
        trial.allow_large_epsilon = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                plan(trial, n_rows)
            except ParameterError:  # undrawable, or refused otherwise at this ε
                return False
        return True

    raise too_small_epsilon(type(publisher).__name__, publisher.epsilon, error, feasible) from None


def epsilon_that_clears(start: float, too_noisy: Callable[[float], bool]) -> float:
    """The ε a low-utility message names: from ``start`` (the estimate that ignores the
    samplers' rounding pad), up in steps of 0.1 % until ``too_noisy(ε)`` is false, then
    rounded up to 3 significant digits (noise only shrinks as ε grows, so it still clears).
    """
    needed = start
    while too_noisy(needed):  # past the rounding pad
        needed *= 1.001
    digits = 2 - math.floor(math.log10(needed))
    return math.ceil(needed * 10**digits) / 10**digits
