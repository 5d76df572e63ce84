"""The legacy privacy and information metrics of the randomization literature.

Privacy loss (average-case, *not* a worst-case guarantee; see C.7 and
``docs/proofs/local-randomizers.md`` for why they are weaker than local DP):

* :func:`map_success_probability` — Wu: the probability that an adversary who knows the
  prior of the values and the noise law guesses the respondent's region (bin) correctly
  with the MAP rule.
* :func:`mutual_information` — Agrawal & Aggarwal: ``I(X; Z)`` in bits, and
  :func:`aa_privacy_loss` ``= 1 − 2^{−I(X;Z)}``.

Information loss:

* :func:`information_loss` — Agrawal & Aggarwal: ``½ ∫ |f_X − f̂_X|`` against the
  population density (in [0, 1]).
* :func:`wu_information_loss` — Wu: ``½ ‖h_x − ĥ‖₁`` against the empirical histogram of the
  true values on the same bins (zero when there is no noise and no sampling error).

References
----------
.. [AA01] D. Agrawal, C. C. Aggarwal. On the design and quantification of privacy
   preserving data mining algorithms. PODS 2001.
.. [Wu] C. W. Wu. A simple method of data perturbation and efficient algorithms for
   density estimation in privacy preserving data mining. IBM Research Report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_int
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.local.additive import AdditiveRandomizer
from ppdp.local.characteristic import CharacteristicVectorRandomizer, cv_map_success
from ppdp.local.reconstruction import Reconstruction, value_edges
from ppdp.random import RandomState, resolve_random_state

__all__ = [
    "aa_privacy_loss",
    "information_loss",
    "map_success_probability",
    "mutual_information",
    "wu_information_loss",
]

_GRID = 20_001


def _prior(prior: ArrayLike | None, k: int) -> NDArray[np.float64]:
    if prior is None:
        return np.full(k, 1.0 / k)
    p = np.asarray(prior, dtype=np.float64).ravel()
    if p.size != k or not np.all(np.isfinite(p)) or np.any(p < 0) or not p.sum() > 0:
        raise ParameterError(f"prior must be {k} non-negative finite weights (not all 0)")
    return p / p.sum()


# ----------------------------------------------------------------- characteristic vector


def _cv_mutual_information(
    r: CharacteristicVectorRandomizer,
    prior: NDArray[np.float64],
    n_samples: int,
    random_state: RandomState,
) -> float:
    src = resolve_random_state(random_state)
    k = r.k
    # X ~ prior (drawn with the package's uniforms), Z | X from the randomizer itself.
    from ppdp import noise

    u = np.asarray(noise.uniform(n_samples, random_state=src), dtype=np.float64)
    x = np.minimum(np.searchsorted(np.cumsum(prior), u, side="right"), k - 1)
    z = r.law.sample(n_samples * k, src).reshape(n_samples, k)
    z[np.arange(n_samples), x] += r.spike
    law, h = r.law, r.spike
    log_r = law.logpmf(z - h) - law.logpmf(z)
    own = log_r[np.arange(n_samples), x]
    with np.errstate(divide="ignore"):
        mix = np.log(prior)[None, :] + log_r
    top = np.max(mix, axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.sum(np.exp(mix - top), axis=1))
    return float(np.mean(own - lse) / math.log(2.0))


# ---------------------------------------------------------------------------- additive


def _additive_grid(
    r: AdditiveRandomizer, edges: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Report grid and the kernels k_t(z) = (F(z − a_t) − F(z − b_t))/(b_t − a_t)."""
    lo, hi = r.domain
    ext = r.scale / 2.0 if r.noise == "uniform" else r.noise_quantile(1.0 - 1e-12)
    z = np.linspace(lo - ext, hi + ext, _GRID)
    z = np.unique(np.concatenate([z, edges - ext, edges + ext] if r.noise == "uniform" else [z]))
    a, b = edges[:-1], edges[1:]
    kern = (r.noise_cdf(z[:, None] - a) - r.noise_cdf(z[:, None] - b)) / (b - a)
    return z, kern


def _trapezoid(y: NDArray[np.float64], x: NDArray[np.float64]) -> float:
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(x)))


# -------------------------------------------------------------------------- public API


def map_success_probability(
    randomizer: AdditiveRandomizer | CharacteristicVectorRandomizer,
    prior: ArrayLike | None = None,
    *,
    bins: int | ArrayLike | None = None,
) -> float:
    """Wu's privacy loss: P(the adversary's MAP guess of the region/bin is correct).

    The adversary knows the prior ``π`` of the regions (bins) and the noise law and sees
    one report. Characteristic vector: exactly ``Σ_z max_j π_j P(z | e_j)
    = E[max_j π_j R_j]`` with ``R_j = p(W_j − h)/p(W_j)`` iid (enumerated on the lattice).
    Additive: ``∫ max_t π_t k_t(z) dz`` with ``x`` uniform inside its bin (numerical
    quadrature on a fine grid). With ``prior=None`` (uniform) the MAP rule is the maximum
    likelihood guess (Wu's MLE adversary) and the baseline without a report is ``1/k``;
    with the population prior it is Wu's MAP adversary.

    Parameters
    ----------
    randomizer : AdditiveRandomizer or CharacteristicVectorRandomizer
    prior : array_like, optional
        Region/bin probabilities (default uniform).
    bins : int or array_like, optional
        Additive only: the value bins (default: ``len(prior)`` equal bins, or 10).
    """
    if isinstance(randomizer, CharacteristicVectorRandomizer):
        return cv_map_success(randomizer, _prior(prior, randomizer.k))
    if not isinstance(randomizer, AdditiveRandomizer):
        raise ParameterTypeError(
            f"randomizer must be a ppdp.local randomizer, not {type(randomizer).__name__}"
        )
    edges = _additive_edges(randomizer, prior, bins)
    pi = _prior(prior, edges.size - 1)
    z, kern = _additive_grid(randomizer, edges)
    return min(1.0, _trapezoid(np.max(kern * pi, axis=1), z))


def _additive_edges(
    r: AdditiveRandomizer, prior: ArrayLike | None, bins: int | ArrayLike | None
) -> NDArray[np.float64]:
    if bins is None:
        bins = 10 if prior is None else int(np.asarray(prior).size)
    return value_edges(r, bins)


def mutual_information(
    randomizer: AdditiveRandomizer | CharacteristicVectorRandomizer,
    prior: ArrayLike | None = None,
    *,
    bins: int | ArrayLike | None = None,
    n_samples: int = 200_000,
    random_state: RandomState = None,
) -> float:
    """``I(X; Z)`` in bits (Agrawal–Aggarwal's privacy-loss basis).

    Additive: ``X`` has the piecewise-uniform density with bin probabilities ``prior`` and
    ``I = h(Z) − h(Y)``, computed by quadrature (deterministic). Characteristic vector
    (``X`` = the region): a Monte Carlo average of ``log₂ P(z | x) − log₂ Σ_j π_j P(z | e_j)``
    over ``n_samples`` draws (standard error roughly ``sd/√n_samples``; ``random_state``
    makes it reproducible).
    """
    if isinstance(randomizer, CharacteristicVectorRandomizer):
        n = check_int("n_samples", n_samples, minimum=100)
        return _cv_mutual_information(randomizer, _prior(prior, randomizer.k), n, random_state)
    if not isinstance(randomizer, AdditiveRandomizer):
        raise ParameterTypeError(
            f"randomizer must be a ppdp.local randomizer, not {type(randomizer).__name__}"
        )
    r = randomizer
    edges = _additive_edges(r, prior, bins)
    pi = _prior(prior, edges.size - 1)
    z, kern = _additive_grid(r, edges)
    fz = kern @ pi
    with np.errstate(divide="ignore", invalid="ignore"):
        integrand = np.where(fz > 0, -fz * np.log(fz), 0.0)
    h_z = _trapezoid(integrand, z)
    s = r.scale
    if r.noise == "uniform":
        h_y = math.log(s)
    elif r.noise == "gaussian":
        h_y = 0.5 * math.log(2.0 * math.pi * math.e * s * s)
    else:
        h_y = 1.0 + math.log(2.0 * s)
    return max(0.0, (h_z - h_y) / math.log(2.0))


def aa_privacy_loss(mutual_information_bits: float) -> float:
    """Agrawal–Aggarwal privacy loss ``P(X | Z) = 1 − 2^{−I(X;Z)}`` (in [0, 1))."""
    i = float(mutual_information_bits)
    if not (math.isfinite(i) and i >= 0):
        raise ParameterError(f"mutual_information_bits ({i!r}) must be a finite number >= 0")
    return -math.expm1(-i * math.log(2.0))


def information_loss(
    estimate: Reconstruction,
    truth: ArrayLike | Reconstruction | Callable[[NDArray[np.float64]], Any],
    *,
    points_per_bin: int = 64,
) -> float:
    """Agrawal–Aggarwal information loss ``½ ∫ |f_X − f̂_X|`` ∈ [0, 1].

    ``truth`` is the population law: bin (category) probabilities on the estimate's bins, a
    :class:`Reconstruction` on the same bins, or a density function ``f(x)`` (then the
    integral is taken numerically, Gauss–Legendre with ``points_per_bin`` nodes per bin;
    the estimate is piecewise constant).
    """
    if not isinstance(estimate, Reconstruction):
        raise ParameterTypeError(
            f"estimate must be a Reconstruction, not {type(estimate).__name__}"
        )
    p_hat = estimate.probabilities
    if isinstance(truth, Reconstruction):
        if truth.density.size != p_hat.size:
            raise DataValidationError("truth and estimate must have the same bins")
        return 0.5 * float(np.abs(truth.probabilities - p_hat).sum())
    if callable(truth):
        if estimate.edges is None:
            raise ParameterError("a density function needs an estimate with numeric bins (edges)")
        m = check_int("points_per_bin", points_per_bin, minimum=2)
        nodes, weights = np.polynomial.legendre.leggauss(m)
        e = estimate.edges
        a, b = e[:-1, None], e[1:, None]
        x = 0.5 * (b - a) * nodes[None, :] + 0.5 * (a + b)
        f = np.asarray(truth(x), dtype=np.float64).reshape(x.shape)
        diff = np.abs(f - estimate.density[:, None])
        return 0.5 * float(np.sum(0.5 * (b - a) * (diff * weights[None, :])))
    p = np.asarray(truth, dtype=np.float64).ravel()
    if p.size != p_hat.size or not np.all(np.isfinite(p)):
        raise DataValidationError(f"truth must be {p_hat.size} finite bin probabilities")
    return 0.5 * float(np.abs(p - p_hat).sum())


def wu_information_loss(estimate: Reconstruction, values: ArrayLike) -> float:
    """Wu's information loss ``½ ‖h_x − ĥ‖₁`` against the empirical histogram of ``values``.

    ``values`` are the true values (numeric, binned on ``estimate.edges``) or labels/region
    indices (``estimate.categories``). Values outside the bins raise.
    """
    if not isinstance(estimate, Reconstruction):
        raise ParameterTypeError(
            f"estimate must be a Reconstruction, not {type(estimate).__name__}"
        )
    p_hat = estimate.probabilities
    if estimate.edges is not None:
        x = np.asarray(values, dtype=np.float64).ravel()
        e = estimate.edges
        if x.size == 0 or not np.all(np.isfinite(x)) or np.any((x < e[0]) | (x > e[-1])):
            raise DataValidationError(
                f"values must be non-empty, finite and inside the bins [{e[0]:g}, {e[-1]:g}]"
            )
        counts = np.histogram(x, bins=e)[0]
    else:
        index = {c: i for i, c in enumerate(estimate.categories or ())}
        labels = [
            v.item() if isinstance(v, np.generic) else v
            for v in np.asarray(values, dtype=object).ravel()
        ]
        if not labels or any(v not in index for v in labels):
            raise DataValidationError(
                "values must be non-empty and among the estimate's categories"
            )
        counts = np.bincount([index[v] for v in labels], minlength=len(index))
    h = counts / counts.sum()
    return 0.5 * float(np.abs(h - p_hat).sum())
