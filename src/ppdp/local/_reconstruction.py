"""The result of a reconstruction, and the projection onto the probability simplex."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Reconstruction", "project_to_simplex"]


def project_to_simplex(v: ArrayLike) -> NDArray[np.float64]:
    """The Euclidean projection of ``v`` onto ``{p ≥ 0, Σ p = 1}``.

    Sort-and-threshold algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008):
    ``p = max(v − τ, 0)`` with the unique τ making the sum 1. Unlike clipping at zero it
    keeps the total at 1 and moves every coordinate by the same amount.

    Examples
    --------
    >>> project_to_simplex([0.5, 0.7, -0.2]).tolist()
    [0.4, 0.6, 0.0]
    """
    x = np.asarray(v, dtype=np.float64).ravel()
    u = np.sort(x)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, x.size + 1)
    rho = int(np.nonzero(u - css / ind > 0)[0][-1])
    tau = css[rho] / (rho + 1.0)
    out = np.maximum(x - tau, 0.0)
    return out / out.sum()


def _frozen(a: ArrayLike | None) -> NDArray[np.float64] | None:
    if a is None:
        return None
    arr = np.array(a, dtype=np.float64)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, kw_only=True)
class Reconstruction:
    """An estimated distribution: pure post-processing of reports (no privacy cost).

    Attributes
    ----------
    density : ndarray
        The estimated density on each bin (probability / bin width) where ``edges`` is
        set; the probability of each category otherwise.
    edges : ndarray or None
        The ``k + 1`` bin edges (numeric data).
    categories : tuple or None
        The ``k`` labels (categorical data or abstract regions).
    iterations : int
        Iterations used (1 for one-step estimators).
    converged : bool
        Whether the stopping rule was met (always True for one-step estimators).
    method : str
        ``"bayes"``, ``"em"``, ``"em-direct"``, ``"fourier"``, ``"characteristic-vector/…"``.
    details : dict
        Method-specific facts (stopping rule, harmonics, unbiased vector, …).
    """

    density: NDArray[np.float64]
    edges: NDArray[np.float64] | None = None
    categories: tuple[Any, ...] | None = None
    iterations: int = 1
    converged: bool = True
    method: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "density", _frozen(self.density))
        object.__setattr__(self, "edges", _frozen(self.edges))
        if self.categories is not None:
            object.__setattr__(self, "categories", tuple(self.categories))

    @property
    def widths(self) -> NDArray[np.float64]:
        """Bin widths (ones for categories)."""
        if self.edges is None:
            return np.ones(self.density.size)
        return np.diff(self.edges)

    @property
    def probabilities(self) -> NDArray[np.float64]:
        """The probability of each bin or category (sums to 1)."""
        return np.asarray(self.density * self.widths)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "density": [float(v) for v in self.density],
            "edges": None if self.edges is None else [float(v) for v in self.edges],
            "categories": None if self.categories is None else list(self.categories),
            "iterations": self.iterations,
            "converged": self.converged,
            "method": self.method,
            "details": self.details,
        }
