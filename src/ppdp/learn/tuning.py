"""Private choice of the regularisation parameter ([CMS11]_ Section 6, Algorithm 4).

Choosing Λ by ordinary cross-validation on the private data voids the guarantee (the
choice depends on every record). Algorithm 4 pays for the choice with data instead:

1. fix the candidates ``Λ_1..Λ_m`` without looking at the data (:class:`PrivateTuning`);
2. split the ``n`` records at random (independently of their values) into ``m + 1``
   disjoint parts of public sizes (as equal as possible);
3. train an ε-DP model ``f_i`` on part ``i`` with ``Λ_i``;
4. count the mistakes ``z_i`` of ``f_i`` on part ``m + 1``, and release ``f_i`` with
   probability ∝ ``exp(−ε z_i / 2)`` (the exponential mechanism, utility ``−z_i`` of
   sensitivity 1).

Guarantee (CMS11 Thm 26): ε-DP under replace-one with ``n`` public, in total: a replaced
record lies in exactly one part; in part ``i ≤ m`` it changes only ``f_i`` (ε-DP; the
selection is post-processing given the unchanged validation part), in part ``m + 1`` it
changes each ``z_i`` by at most 1 (the selection is ε-DP given the models). The mistake
counts are private: they are never released (only the chosen index is).

References
----------
.. [CMS11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate. Differentially private empirical
   risk minimization. JMLR 12:1069-1109, 2011.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp import _progress, noise
from ppdp._validation import check_positive
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.mechanisms import ExponentialMechanism
from ppdp.random import RandomSource

__all__ = ["PrivateTuning", "TuningResult", "split_parts", "tune"]

custodian = logging.getLogger("ppdp.custodian")


@dataclass(frozen=True)
class PrivateTuning:
    """The public grid of Λ for Algorithm 4 of [CMS11]_.

    Parameters
    ----------
    regularization_grid : sequence of float
        Candidates Λ_1..Λ_m, each finite and > 0, fixed before seeing the data (m ≥ 2).

    Examples
    --------
    >>> PrivateTuning((1e-3, 1e-2)).n_candidates
    2
    """

    regularization_grid: tuple[float, ...]

    def __post_init__(self) -> None:
        grid = self.regularization_grid
        if isinstance(grid, str) or not isinstance(grid, Sequence | np.ndarray):
            raise ParameterTypeError(
                f"regularization_grid ({type(grid).__name__}) must be a sequence of numbers"
            )
        values = tuple(check_positive(f"regularization_grid[{i}]", v) for i, v in enumerate(grid))
        if len(values) < 2:
            raise ParameterError(
                f"regularization_grid (length {len(values)}) must hold at least 2 candidates"
            )
        object.__setattr__(self, "regularization_grid", values)

    @property
    def n_candidates(self) -> int:
        return len(self.regularization_grid)

    @property
    def n_parts(self) -> int:
        """``m + 1``: one training part per candidate and one validation part."""
        return self.n_candidates + 1

    @classmethod
    def coerce(cls, value: Any) -> PrivateTuning | None:
        """``None``, a :class:`PrivateTuning` or a sequence of Λ values."""
        if value is None or isinstance(value, PrivateTuning):
            return value
        if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
            raise ParameterTypeError(
                f"tuning ({type(value).__name__}) must be None, a PrivateTuning or a sequence "
                "of candidate Λ values"
            )
        return cls(tuple(value))

    def part_sizes(self, n: int) -> list[int]:
        """Sizes of the m + 1 parts for n records (public: they depend on n only)."""
        k = self.n_parts
        return [n // k + (1 if i < n % k else 0) for i in range(k)]


@dataclass(frozen=True)
class TuningResult:
    """The released outcome of Algorithm 4: the chosen index and its model (no errors)."""

    index: int
    regularization: float
    model: Any


def split_parts(n: int, sizes: Sequence[int], source: RandomSource) -> list[NDArray[np.intp]]:
    """A uniformly random partition of ``range(n)`` into parts of the given sizes.

    The permutation uses the OS CSPRNG (or the seeded source) through
    :func:`ppdp.noise.uniform`; it does not depend on the records' values.
    """
    keys = np.asarray(noise.uniform(n, random_state=source), dtype=np.float64)
    perm = np.argsort(keys, kind="stable")
    bounds = np.cumsum([0, *sizes])
    return [perm[bounds[i] : bounds[i + 1]] for i in range(len(sizes))]


def tune(
    Z: NDArray[np.float64],
    y: NDArray[np.float64],
    *,
    tuning: PrivateTuning,
    epsilon: float,
    fit_one: Callable[[NDArray[np.float64], NDArray[np.float64], float], Any],
    mistakes: Callable[[Any, NDArray[np.float64], NDArray[np.float64]], int],
    source: RandomSource,
) -> TuningResult:
    """Run Algorithm 4: train one ε-DP model per candidate, select one privately.

    Parameters
    ----------
    Z, y : ndarray
        Records in the unit ball and labels ±1.
    tuning : PrivateTuning
    epsilon : float
        ε of each model and of the selection; the whole procedure is ε-DP.
    fit_one : callable ``(Z_i, y_i, Λ) -> model``
        An ε-DP learner (it draws its own noise).
    mistakes : callable ``(model, Z_val, y_val) -> int``
        Number of misclassified validation records.
    source : RandomSource
    """
    n = Z.shape[0]
    parts = split_parts(n, tuning.part_sizes(n), source)
    models = []
    errors = np.empty(tuning.n_candidates)
    val = parts[-1]
    grid = enumerate(tuning.regularization_grid)  # a bar per candidate, not per solver step
    for i, lam in _progress.track(
        grid, "private tuning", total=tuning.n_candidates, unit="candidate"
    ):
        idx = parts[i]
        model = fit_one(Z[idx], y[idx], lam)
        models.append(model)
        errors[i] = mistakes(model, Z[val], y[val])
    choice = ExponentialMechanism(epsilon=epsilon, sensitivity=1.0).randomise(
        -errors, random_state=source
    )
    custodian.info(
        "private tuning: validation mistakes %s on %d rows (private: not released); chose Λ=%g",
        errors.astype(int).tolist(),
        val.size,
        tuning.regularization_grid[choice],
    )
    return TuningResult(
        index=int(choice),
        regularization=tuning.regularization_grid[choice],
        model=models[choice],
    )
