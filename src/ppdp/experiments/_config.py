"""Validation shared by the experiment configs (frozen dataclasses)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ppdp._validation import check_epsilon, check_int, check_option
from ppdp.exceptions import ParameterError

__all__ = ["check_common", "epsilon_grid", "int_grid"]


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
    object.__setattr__(config, "trials", check_int("trials", config.trials, minimum=1))
    object.__setattr__(config, "seed", check_int("seed", config.seed, minimum=0))
    if config.n_rows is not None:
        object.__setattr__(config, "n_rows", check_int("n_rows", config.n_rows, minimum=30))


def check_table_releases(config: Any, method_names: Iterable[str]) -> None:
    """Validate and normalise the fields of the experiments that release whole tables:
    ``epsilons``, ``methods`` (a non-empty subset of ``method_names``),
    ``lda_class_sizes`` and ``pca_components``."""
    names = tuple(method_names)
    object.__setattr__(config, "epsilons", epsilon_grid("epsilons", config.epsilons))
    methods = tuple(config.methods)
    if not methods or any(m not in names for m in methods):
        raise ParameterError(
            f"methods ({config.methods!r}) must be a non-empty subset of "
            + ", ".join(repr(m) for m in names)
        )
    object.__setattr__(config, "methods", methods)
    check_option("lda_class_sizes", config.lda_class_sizes, ("public", "noisy"))
    object.__setattr__(
        config, "pca_components", check_int("pca_components", config.pca_components, minimum=1)
    )
