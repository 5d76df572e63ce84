"""Noisy Fisher-LDA building blocks shared by LDA-DP and Mul-LDA-DP (Gu, Zhang & Zhang 2022).

Records are scaled so that ``‖x‖₂ ≤ 1`` (by a *declared* bound, never the data's maximum);
neighbours replace one record by another of the **same class**, and the class counts
``n_c`` are public. Under that relation:

* the class sums ``Σ_{x∈X_c} x`` (all classes together) move by at most ``Δ₂ = 2`` in L2
  (only one class sum changes, by ``x − x'``);
* the upper triangle (diagonal included) of ``Σ xxᵀ`` moves by at most ``Δ₂ = √2`` in L2
  (``max Σ_{i≤j} (x_i x_j − y_i y_j)² = 2`` over unit ``x, y``, at ``x = e₁, y = e₂``).

:func:`lda_noise_plan` calibrates the noise of both statistics: ``calibration="gaussian"``
(default) uses the analytic Gaussian mechanism with those sensitivities (ALGORITHMS-publishing
§0 and B.3 "recommended"); ``"paper"`` uses the MOD-SULQ-style template of B.3 (valid, but
2–30 times more noise). Everything after the noise — :func:`noisy_scatter` and
:func:`fisher_directions` with a data-independent ridge — is post-processing. The privacy
argument is in ``docs/proofs/lda-dp.md``.

Both the centralised :class:`~ppdp.publish.LDAProjectionPublisher` and the federated roles
(:mod:`ppdp.federated`) use these functions, so they compute the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp import noise
from ppdp._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_nonnegative,
    check_option,
    check_positive,
    check_real,
)
from ppdp.budget import PrivacyBudget
from ppdp.data.stats import float_sum_error_bound
from ppdp.exceptions import CalibrationError, ParameterError, ParameterTypeError
from ppdp.mechanisms import GaussianMechanism
from ppdp.random import RandomState, resolve_random_state

__all__ = [
    "CALIBRATIONS",
    "CLASS_SUM_SENSITIVITY",
    "SECOND_MOMENT_SENSITIVITY",
    "ClassMoments",
    "LDANoisePlan",
    "class_moments",
    "default_ridge",
    "fisher_directions",
    "from_upper",
    "lda_noise_plan",
    "noisy_scatter",
    "paper_mean_sigma",
    "paper_scatter_sigma",
    "split_budget",
    "symmetric_noise",
    "upper",
]

CALIBRATIONS = ("gaussian", "paper")
#: L2 sensitivity of all class sums together: replace-one within a class, ‖x‖₂ ≤ 1.
CLASS_SUM_SENSITIVITY = 2.0
#: L2 sensitivity of upper(Σxxᵀ) (diagonal included): replace-one, ‖x‖₂ ≤ 1.
SECOND_MOMENT_SENSITIVITY = math.sqrt(2.0)


@dataclass(frozen=True)
class LDANoisePlan:
    """The noise levels of one noisy Fisher-LDA release.

    Attributes
    ----------
    mean_sigmas : tuple of float
        Standard deviation of the Gaussian noise on each class *mean* (the noise on the class
        sum divided by the public ``n_c``), one per class.
    scatter_sigma : float
        Standard deviation of each upper-triangle entry (diagonal included) of the symmetric
        noise ``E`` added to ``Σ xxᵀ``.
    mean_budget : PrivacyBudget
        ``(ε₁, δ₁)`` of the class-means part.
    scatter_budget : PrivacyBudget
        ``(ε₂, δ₂)`` of the scatter part.
    calibration : str
        ``"gaussian"`` or ``"paper"``.
    details : dict
        JSON-safe facts for the ledger (sensitivities, paddings, grids, budgets).
    """

    mean_sigmas: tuple[float, ...]
    scatter_sigma: float
    mean_budget: PrivacyBudget
    scatter_budget: PrivacyBudget
    calibration: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def budget(self) -> PrivacyBudget:
        """The total ``(ε₁ + ε₂, δ₁ + δ₂)`` (sequential composition)."""
        return self.mean_budget + self.scatter_budget


@dataclass(frozen=True)
class ClassMoments:
    """The exact statistics a noisy Fisher-LDA release reads: counts, class sums, ``Σxxᵀ``.

    Not a release: the noise is added to ``class_sums`` and ``upper(second_moment)``.
    Mergeable with ``+`` (the statistics of two disjoint tables add up), so a distributed
    scan reduces one per partition (``ppdp.data.distributed.scan_table``).

    Attributes
    ----------
    counts : ndarray of int64, shape (K,)
        Rows per class (custodian only: the release uses the declared public counts).
    class_sums : ndarray, shape (K, d)
        ``Σ_{x∈X_c} x`` for every class.
    second_moment : ndarray, shape (d, d)
        ``Σ x xᵀ`` over all rows.
    """

    counts: NDArray[np.int64]
    class_sums: NDArray[np.float64]
    second_moment: NDArray[np.float64]

    def __add__(self, other: ClassMoments) -> ClassMoments:
        if not isinstance(other, ClassMoments):
            return NotImplemented
        if other.class_sums.shape != self.class_sums.shape:
            raise ParameterError(
                f"class moments of shapes {self.class_sums.shape} and "
                f"{other.class_sums.shape} cannot be added"
            )
        return ClassMoments(
            self.counts + other.counts,
            self.class_sums + other.class_sums,
            self.second_moment + other.second_moment,
        )


def class_moments(X: ArrayLike, y: ArrayLike, n_classes: int) -> ClassMoments:
    """The :class:`ClassMoments` of the rows ``X`` with class codes ``y`` in ``0..K-1``.

    >>> m = class_moments([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [0, 1, 1], 2)
    >>> m.counts.tolist(), m.class_sums.tolist(), m.second_moment.tolist()
    ([1, 2], [[1.0, 0.0], [1.0, 2.0]], [[2.0, 1.0], [1.0, 2.0]])
    """
    A = np.asarray(X, dtype=np.float64)
    codes = np.asarray(y, dtype=np.int64).reshape(-1)
    K = check_int("n_classes", n_classes, minimum=1)
    if A.ndim != 2 or codes.size != A.shape[0]:
        raise ParameterError(
            f"X has shape {A.shape} and y {codes.size} entries; expected (n, d), n"
        )
    onehot = np.zeros((A.shape[0], K))
    onehot[np.arange(A.shape[0]), codes] = 1.0
    # any summation order: the float pad of the noise plan covers it
    return ClassMoments(np.bincount(codes, minlength=K), onehot.T @ A, A.T @ A)


# ------------------------------------------------------------------ budget


def split_budget(epsilon: float, delta: float, share: float) -> tuple[PrivacyBudget, PrivacyBudget]:
    """Split ``(ε, δ)`` into ``(share·ε, share·δ)`` and the rest, never adding up to more.

    The second part is nudged down until the two parts sum to at most ``(ε, δ)`` in the
    accountant's decimal arithmetic (``docs/proofs/ledger.md`` §5), so that spending the two
    parts of an affordable total is always accepted.

    >>> a, b = split_budget(1.0, 1e-5, 0.5)
    >>> (a.epsilon, b.epsilon, a.delta, b.delta)
    (0.5, 0.5, 5e-06, 5e-06)
    """
    share = check_real("share", share)
    if not (0.0 < share < 1.0):
        raise ParameterError(f"share ({share!r}) must be in (0, 1)")
    e1 = epsilon * share
    e2 = epsilon - e1
    while Decimal(repr(e1)) + Decimal(repr(e2)) > Decimal(repr(float(epsilon))):
        e2 = math.nextafter(e2, 0.0)
    d1 = delta * share
    d2 = delta - d1
    while Decimal(repr(d1)) + Decimal(repr(d2)) > Decimal(repr(float(delta))):
        d2 = math.nextafter(d2, 0.0)
    return PrivacyBudget(e1, d1), PrivacyBudget(e2, d2)


# ------------------------------------------------------------------ calibration


def paper_mean_sigma(epsilon: float, delta: float, n_features: int, n_c: int) -> float:
    """MOD-SULQ-style noise on one class mean (ALGORITHMS-publishing B.3, Theorem 5 [recon]).

    ``β₁ = 2√d/(n_c ε) · √(2 ln(d/(√(2π) δ))) + √2/(n_c √ε)``, valid when
    ``ln(d/(√(2π) δ)) ≥ 2``; otherwise :class:`~ppdp.exceptions.CalibrationError`.

    >>> round(paper_mean_sigma(1.0, 1e-5, 10, 1000), 6)
    0.033535
    """
    d = check_int("n_features", n_features, minimum=1)
    n_c = check_int("n_c", n_c, minimum=1)
    log_term = math.log(d / (math.sqrt(2.0 * math.pi) * delta))
    if log_term < 2.0:
        raise CalibrationError(
            f"calibration 'paper' needs ln(d/(sqrt(2*pi)*delta)) >= 2 for the class means; "
            f"d={d}, delta={delta!r} give {log_term:.3g}: use a smaller delta or "
            "calibration='gaussian'"
        )
    return 2.0 * math.sqrt(d) / (n_c * epsilon) * math.sqrt(2.0 * log_term) + math.sqrt(2.0) / (
        n_c * math.sqrt(epsilon)
    )


def paper_scatter_sigma(epsilon: float, delta: float, n_features: int) -> float:
    """MOD-SULQ noise on each upper entry of the unnormalised ``Σxxᵀ`` (B.3, ``N = 1``).

    ``β₂ = (d+1)/ε · √(2 ln((d²+d)/(2√(2π) δ))) + 1/√ε`` (Chaudhuri, Sarwate & Sinha 2013).

    >>> round(paper_scatter_sigma(1.0, 1e-5, 10), 4)
    60.4434
    """
    d = check_int("n_features", n_features, minimum=1)
    log_term = math.log((d * d + d) / (2.0 * math.sqrt(2.0 * math.pi) * delta))
    if log_term <= 0.0:
        raise CalibrationError(
            f"calibration 'paper' needs (d^2+d)/(2*sqrt(2*pi)*delta) > 1; d={d}, "
            f"delta={delta!r}: use a smaller delta or calibration='gaussian'"
        )
    return (d + 1) / epsilon * math.sqrt(2.0 * log_term) + 1.0 / math.sqrt(epsilon)


def _check_counts(class_counts: Any) -> tuple[int, ...]:
    if isinstance(class_counts, (str, bytes)) or not isinstance(
        class_counts, (Sequence, np.ndarray)
    ):
        raise ParameterTypeError(
            f"class_counts ({class_counts!r}) must be a sequence of public class sizes"
        )
    counts = tuple(check_int("class_counts", c, minimum=1) for c in class_counts)
    if len(counts) < 2:
        raise ParameterError(
            f"class_counts ({list(counts)!r}) must give at least 2 classes, each of size >= 1"
        )
    return counts


def _sum_pad(n: int, entries: int) -> float:
    """L2 padding for float summation: twice the per-entry bound over ``entries`` entries."""
    return 2.0 * float_sum_error_bound(n, max_term=1.0) * math.sqrt(entries)


def class_sum_mechanism(plan: LDANoisePlan) -> GaussianMechanism:
    """The Gaussian mechanism of the class sums of a ``"gaussian"`` plan (centralised release).

    One release of the ``K·d`` class sums with L2 sensitivity ``2·factor`` plus the
    float-summation pad; its ``sigma`` divided by ``n_c`` is ``plan.mean_sigmas[c]``.
    """
    if plan.calibration != "gaussian":
        raise ParameterError("class_sum_mechanism needs a plan with calibration 'gaussian'")
    d = plan.details
    return GaussianMechanism(
        epsilon=plan.mean_budget.epsilon,
        delta=plan.mean_budget.delta,
        sensitivity=d["class_sum_sensitivity"] + d["class_sum_float_pad"],
        dimension=d["n_classes"] * d["n_features"],
        allow_large_epsilon=True,
    )


def second_moment_mechanism(plan: LDANoisePlan) -> GaussianMechanism:
    """The Gaussian mechanism of ``upper(Σxxᵀ)`` of a ``"gaussian"`` plan (σ = scatter_sigma)."""
    if plan.calibration != "gaussian":
        raise ParameterError("second_moment_mechanism needs a plan with calibration 'gaussian'")
    d = plan.details
    p = d["n_features"]
    return GaussianMechanism(
        epsilon=plan.scatter_budget.epsilon,
        delta=plan.scatter_budget.delta,
        sensitivity=d["second_moment_sensitivity"] + d["second_moment_float_pad"],
        dimension=p * (p + 1) // 2,
        allow_large_epsilon=True,
    )


def lda_noise_plan(
    *,
    epsilon: float,
    delta: float,
    n_features: int,
    class_counts: Sequence[int],
    calibration: str = "gaussian",
    mean_share: float = 0.5,
    sensitivity_factor: float = 1.0,
    allow_large_epsilon: bool = False,
) -> LDANoisePlan:
    """Calibrate the noise of the noisy class means and the noisy ``Σxxᵀ``.

    Guarantee: releasing ``μ̃_c = (Σ_{X_c} x + g_c)/n_c`` for every class and
    ``Σxxᵀ + E`` with these levels is ``(ε, δ)``-DP (``(ε₁, δ₁) + (ε₂, δ₂)``, basic
    composition) for records with ``‖x‖₂ ≤ 1``, neighbours replacing one record by one of the
    same class, and public class counts.

    Parameters
    ----------
    epsilon, delta : float
        The budget of the means and scatter together; ``δ`` in (0, 1).
    n_features : int
        ``d``, the dimension of the (scaled) records.
    class_counts : sequence of int
        The public class sizes ``n_c ≥ 1`` (at least two classes).
    calibration : {"gaussian", "paper"}, default "gaussian"
        ``"gaussian"``: the analytic Gaussian mechanism (Balle & Wang 2018) on all class
        sums at once (``Δ₂ = 2``) and on ``upper(Σxxᵀ)`` (``Δ₂ = √2``), each padded for float
        summation and the power-of-two grid. ``"paper"``: the MOD-SULQ-style template of
        ALGORITHMS-publishing B.3 (:func:`paper_mean_sigma`, :func:`paper_scatter_sigma`).
    mean_share : float, default 0.5
        Share of ``ε`` and of ``δ`` spent on the means (the paper splits evenly).
    sensitivity_factor : float, default 1.0
        Multiplies both sensitivities (hence both noise levels); ≥ 1. The federated joint
        view uses ``√(2m/(m+1))`` (ALGORITHMS-publishing B.5 item 2).
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Returns
    -------
    LDANoisePlan

    Raises
    ------
    ParameterError, ParameterTypeError
        Invalid budget, shape, counts, share or factor.
    CalibrationError
        ``"paper"`` outside the range where its template is valid.

    Notes
    -----
    The Gaussian plan's ``mean_sigmas[c]`` is the class-sum mechanism's σ divided by ``n_c``;
    that σ is calibrated for ``2·factor + 2√(Kd)·float_sum_error_bound(n) + √(Kd)·Λ`` (float
    sums, grid). The paper plan's levels are the template's closed forms times ``factor``; the
    template's proof ignores floating point.

    Examples
    --------
    >>> plan = lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=10, class_counts=[600, 400])
    >>> [round(s * n, 3) for s, n in zip(plan.mean_sigmas, [600, 400])]
    [14.702, 14.702]
    >>> round(plan.scatter_sigma, 3)
    10.396
    """
    if not isinstance(allow_large_epsilon, bool):
        raise ParameterTypeError(
            f"allow_large_epsilon ({allow_large_epsilon!r}) must be True or False"
        )
    eps = check_epsilon("epsilon", epsilon, allow_large=allow_large_epsilon)
    dlt = check_delta("delta", delta, allow_zero=False)
    p = check_int("n_features", n_features, minimum=1)
    counts = _check_counts(class_counts)
    calibration = check_option("calibration", calibration, CALIBRATIONS)
    factor = check_positive("sensitivity_factor", sensitivity_factor)
    if factor < 1.0:
        raise ParameterError(f"sensitivity_factor ({sensitivity_factor!r}) must be >= 1")
    share = check_real("mean_share", mean_share)
    if not 0.0 < share < 1.0:
        raise ParameterError(f"mean_share ({mean_share!r}) must be strictly between 0 and 1")
    mean_budget, scatter_budget = split_budget(eps, dlt, share)
    K = len(counts)
    n = sum(counts)
    details: dict[str, Any] = {
        "calibration": calibration,
        "neighbours": "replace-one within a class; class counts public; ‖x‖₂ ≤ 1",
        "n_features": p,
        "n_classes": K,
        "class_counts": list(counts),
        "n": n,
        "mean_share": float(mean_share),
        "sensitivity_factor": factor,
        "class_sum_sensitivity": CLASS_SUM_SENSITIVITY * factor,
        "second_moment_sensitivity": SECOND_MOMENT_SENSITIVITY * factor,
        "epsilon_means": mean_budget.epsilon,
        "delta_means": mean_budget.delta,
        "epsilon_scatter": scatter_budget.epsilon,
        "delta_scatter": scatter_budget.delta,
    }
    if calibration == "gaussian":
        details["class_sum_float_pad"] = _sum_pad(n, K * p)
        details["second_moment_float_pad"] = _sum_pad(n, p * (p + 1) // 2)
        probe = LDANoisePlan((), 0.0, mean_budget, scatter_budget, calibration, details)
        sums = class_sum_mechanism(probe)
        scatter = second_moment_mechanism(probe)
        sum_sigma = sums.sigma
        mean_sigmas = tuple(sum_sigma / c for c in counts)
        scatter_sigma = scatter.sigma
        details["class_sum_sigma"] = sum_sigma
        details["class_sum_granularity"] = sums.granularity
        details["second_moment_granularity"] = scatter.granularity
        details["mechanism"] = "analytic Gaussian (Balle & Wang 2018)"
    else:
        e1, d1 = mean_budget.epsilon, mean_budget.delta
        mean_sigmas = tuple(factor * paper_mean_sigma(e1, d1, p, c) for c in counts)
        scatter_sigma = factor * paper_scatter_sigma(
            scatter_budget.epsilon, scatter_budget.delta, p
        )
        details["mechanism"] = "MOD-SULQ-style template (ALGORITHMS-publishing B.3)"
    details["mean_sigmas"] = list(mean_sigmas)
    details["scatter_sigma"] = scatter_sigma
    return LDANoisePlan(
        mean_sigmas=mean_sigmas,
        scatter_sigma=scatter_sigma,
        mean_budget=mean_budget,
        scatter_budget=scatter_budget,
        calibration=calibration,
        details=details,
    )


def default_ridge(plan: LDANoisePlan) -> float:
    """A data-independent ridge ``λ = 2√d·β₂``: the expected spectral norm of the noise ``E``.

    ``E`` is a ``d×d`` symmetric matrix with iid ``N(0, β₂²)`` upper entries, whose spectral
    norm is about ``2√d·β₂`` (Wigner's semicircle law). Adding ``λI`` lifts the directions that
    the noise pushed negative (the within-class scatter of one-hot data is singular). ``λ``
    depends only on ``ε``, ``δ`` and ``d``, so adding it is post-processing. (Also covering
    the rank-two noise that ``n_cμ̃_cμ̃_cᵀ`` carries, about ``2√d·n_cσ_c`` per class, was
    measured on Adult to over-regularise: training accuracy of an SVM on the projections 0.812
    against 0.822 at ε = 1, 0.777 against 0.803 at ε = 0.2, δ = 1e-6, 8 seeds.)

    >>> plan = lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=4, class_counts=[50, 50])
    >>> round(default_ridge(plan), 3)
    41.584
    """
    p = int(plan.details["n_features"])
    return 2.0 * math.sqrt(p) * plan.scatter_sigma


# ------------------------------------------------------------------ matrices and noise


def upper(M: ArrayLike) -> NDArray[np.float64]:
    """The upper triangle (diagonal included) of a square matrix, row by row."""
    A = np.asarray(M, dtype=np.float64)
    return A[np.triu_indices(A.shape[-1])]


def from_upper(v: ArrayLike, d: int) -> NDArray[np.float64]:
    """The symmetric ``d×d`` matrix whose upper triangle (row by row) is ``v``.

    >>> from_upper([1.0, 2.0, 3.0], 2).tolist()
    [[1.0, 2.0], [2.0, 3.0]]
    """
    d = check_int("d", d, minimum=1)
    vec = np.asarray(v, dtype=np.float64).reshape(-1)
    if vec.size != d * (d + 1) // 2:
        raise ParameterError(
            f"v has {vec.size} entries; a {d}x{d} upper triangle has {d * (d + 1) // 2}"
        )
    iu = np.triu_indices(d)
    out = np.zeros((d, d))
    out[iu] = vec
    out[iu[1], iu[0]] = vec
    return out


def symmetric_noise(d: int, sigma: float, *, random_state: RandomState) -> NDArray[np.float64]:
    """A symmetric ``d×d`` matrix: upper triangle (diagonal included) iid ``N(0, σ²)``, mirrored.

    Drawn with :func:`ppdp.noise.gaussian` on the grid ``noise.granularity(σ)``; ``σ = 0``
    gives the zero matrix. A release that adds it to a private matrix must first snap that
    matrix to the same grid (:func:`ppdp.noise.snap`): grid noise on an unsnapped value can be
    recognised from the output given a candidate dataset (issue 11,
    ``docs/proofs/lda-dp.md`` §7). No release path of ppdp uses it.
    """
    d = check_int("d", d, minimum=1)
    sigma = check_nonnegative("sigma", sigma)
    m = d * (d + 1) // 2
    if sigma == 0.0:
        return np.zeros((d, d))
    source = resolve_random_state(random_state)
    draws = noise.gaussian(sigma, m, random_state=source, granularity=noise.granularity(sigma))
    return from_upper(np.asarray(draws, dtype=np.float64), d)


def noisy_scatter(
    second_moment_noisy: ArrayLike, noisy_means: ArrayLike, class_counts: Sequence[int]
) -> NDArray[np.float64]:
    """``S̃_w = (Σxxᵀ + E) − Σ_c n_c μ̃_c μ̃_cᵀ`` (post-processing of the noisy statistics).

    The noisy means enter only here, never as ``Σ (x − μ̃)(x − μ̃)ᵀ`` (whose sensitivity is
    unbounded, B.5 item 4). The result is symmetrised.

    >>> noisy_scatter(np.eye(2) * 3, np.array([[1.0, 0.0], [0.0, 1.0]]), [1, 2]).tolist()
    [[2.0, 0.0], [0.0, 1.0]]
    """
    Q = np.asarray(second_moment_noisy, dtype=np.float64)
    mu = np.asarray(noisy_means, dtype=np.float64)
    counts = np.asarray(_check_counts(class_counts), dtype=np.float64)
    if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
        raise ParameterError(f"second_moment_noisy has shape {Q.shape}; it must be square")
    if mu.shape != (counts.size, Q.shape[0]):
        raise ParameterError(
            f"noisy_means has shape {mu.shape}; expected ({counts.size}, {Q.shape[0]})"
        )
    S = Q - (mu.T * counts) @ mu
    return 0.5 * (S + S.T)


def _fix_sign(W: NDArray[np.float64]) -> NDArray[np.float64]:
    pivot = W[np.argmax(np.abs(W), axis=0), np.arange(W.shape[1])]
    return W * np.where(pivot < 0.0, -1.0, 1.0)


def fisher_directions(
    noisy_means: ArrayLike,
    class_counts: Sequence[int],
    scatter_noisy: ArrayLike,
    *,
    ridge: float,
    n_components: int | None = None,
    constant: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """The Fisher discriminant direction(s) from noisy means and a noisy within-class scatter.

    ``S = sym(S̃_w) + λI`` with its eigenvalues floored at ``max(λ, 10⁻¹²·max(1, ‖S‖))`` (the
    noisy scatter may be indefinite, B.5 item 5). Two classes: the single unit column
    ``∝ S⁻¹(μ̃₁ − μ̃₂)`` (sign kept). ``K > 2``: the ``r = min(K − 1, n_components, d)`` leading
    generalised eigenvectors of ``(S̃_b, S)`` with ``S̃_b = Σ n_c(μ̃_c − μ̄)(μ̃_c − μ̄)ᵀ``, each
    scaled to unit norm, sign fixed (largest-magnitude entry positive). Pure post-processing.

    Parameters
    ----------
    noisy_means : array (K, d)
    class_counts : sequence of K ints (public)
    scatter_noisy : array (d, d)
    ridge : float
        ``λ ≥ 0``, chosen without looking at the data (e.g. :func:`default_ridge`).
    n_components : int, optional
        At most this many directions (default ``K − 1``).
    constant : array (d, k), optional
        Columns spanning directions along which *every* record has the same coordinate, known
        from the schema without the data (e.g. each one-hot block's indicator: its entries sum
        to 1). The within-class scatter is singular along them and the noise would dominate
        there, though they cannot separate classes; the directions are computed in their
        orthogonal complement (post-processing, lossless for projections up to a constant).

    Returns
    -------
    ndarray of shape (d, r)

    Examples
    --------
    >>> W = fisher_directions([[1.0, 0.0], [0.0, 0.0]], [5, 5], np.diag([1.0, 4.0]), ridge=0.0)
    >>> W.round(6).tolist()
    [[1.0], [0.0]]
    """
    mu = np.asarray(noisy_means, dtype=np.float64)
    counts = np.asarray(_check_counts(class_counts), dtype=np.float64)
    S = np.asarray(scatter_noisy, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ParameterError(f"scatter_noisy has shape {S.shape}; it must be square")
    d = S.shape[0]
    K = counts.size
    if mu.shape != (K, d):
        raise ParameterError(f"noisy_means has shape {mu.shape}; expected ({K}, {d})")
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(S))):
        raise ParameterError("noisy_means and scatter_noisy must be finite")
    lam = check_nonnegative("ridge", ridge)
    r_max = min(K - 1, d)
    if n_components is not None:
        r = check_int("n_components", n_components, minimum=1)
        r_max = min(r_max, r)
    if constant is not None:
        C0 = np.asarray(constant, dtype=np.float64).reshape(d, -1)
        if not np.all(np.isfinite(C0)):
            raise ParameterError("constant must be finite")
        U0, sv, _ = np.linalg.svd(C0, full_matrices=True)
        k = int(np.count_nonzero(sv > 1e-12 * max(1.0, float(sv.max(initial=0.0)))))
        B = U0[:, k:]
        if B.shape[1] == 0:
            raise ParameterError("constant spans every direction: nothing is left to project on")
        inner = fisher_directions(mu @ B, class_counts, B.T @ S @ B, ridge=lam, n_components=r_max)
        W = B @ inner
        return W if K == 2 else _fix_sign(W)
    vals, vecs = np.linalg.eigh(0.5 * (S + S.T) + lam * np.eye(d))
    floor = max(lam, 1e-12 * max(1.0, float(np.max(np.abs(vals)))))
    vals = np.maximum(vals, floor)
    if K == 2:
        diff = mu[0] - mu[1]
        w = vecs @ ((vecs.T @ diff) / vals)
        norm = float(np.linalg.norm(w))
        if norm == 0.0 or not math.isfinite(norm):
            w = np.zeros(d)
            w[0] = 1.0
            return w[:, None]
        return (w / norm)[:, None]
    grand = (counts @ mu) / counts.sum()
    C = mu - grand
    Sb = (C.T * counts) @ C
    Winv_half = (vecs / np.sqrt(vals)) @ vecs.T
    M = Winv_half @ Sb @ Winv_half
    _, U = np.linalg.eigh(0.5 * (M + M.T))
    U = U[:, ::-1][:, :r_max]
    Wd = Winv_half @ U
    norms = np.linalg.norm(Wd, axis=0)
    norms[norms == 0.0] = 1.0
    return _fix_sign(Wd / norms)
