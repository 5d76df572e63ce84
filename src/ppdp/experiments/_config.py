"""Validation shared by the experiment configs (frozen dataclasses)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ppdp._validation import check_epsilon, check_int, check_option
from ppdp.exceptions import ParameterError

__all__ = ["check_common", "epsilon_grid", "int_grid", "set_checked", "set_ints"]


def set_checked(config: Any, check: Callable[..., Any], *names: str, **options: Any) -> None:
    """Set each field of the frozen ``config`` named in ``names`` to what
    ``check(name, value, **options)`` returns (it raises on a bad value)."""
    for name in names:
        object.__setattr__(config, name, check(name, getattr(config, name), **options))


def set_ints(config: Any, **minimums: int) -> None:
    """Check each named field of the frozen ``config`` is an int at least its minimum, in
    order (the first bad one is refused)."""
    for name, minimum in minimums.items():
        set_checked(config, check_int, name, minimum=minimum)


def epsilon_grid(name: str, values: Any) -> tuple[float, ...]:
    """A non-empty tuple of valid epsilons."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(f"{name} ({values!r}) must be a non-empty sequence of epsilons")
    out = tuple(check_epsilon(name, v) for v in values)
    if not out:
        raise ParameterError(f"{name} (()) must be a non-empty sequence of epsilons")
    return out


def int_grid(name: str, values: Any, *, minimum: int = 1) -> tuple[int, ...]:
    """A non-empty tuple of ints >= minimum."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(f"{name} ({values!r}) must be a non-empty sequence of integers")
    out = tuple(check_int(name, v, minimum=minimum) for v in values)
    if not out:
        raise ParameterError(f"{name} (()) must be a non-empty sequence of integers")
    return out


def check_common(config: Any) -> None:
    """Validate and normalise ``trials``, ``seed`` and ``n_rows`` of a frozen config."""
    set_ints(config, trials=1, seed=0)
    if config.n_rows is not None:
        set_ints(config, n_rows=30)


def check_table_releases(config: Any, method_names: Iterable[str]) -> None:
    """Validate and normalise the fields of the experiments that release whole tables:
    ``epsilons``, ``methods`` (a non-empty subset of ``method_names``),
    ``lda_class_sizes`` and ``pca_components``."""
    names = tuple(method_names)
    set_checked(config, epsilon_grid, "epsilons")
    methods = tuple(config.methods)
    if not methods or any(m not in names for m in methods):
        raise ParameterError(
            f"methods ({config.methods!r}) must be a non-empty subset of "
            + ", ".join(repr(m) for m in names)
        )
    object.__setattr__(config, "methods", methods)
    check_option("lda_class_sizes", config.lda_class_sizes, ("public", "noisy"))
    set_ints(config, pca_components=1)
