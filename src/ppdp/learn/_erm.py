"""Regularised empirical risk minimisation: the losses and the exact solver behind private ERM.

The objective minimised is, for a linear predictor ``w`` and ``n`` records ``(x_i, y_i)``
with ``y_i`` in ``{-1, +1}``::

    J(w) = (1/n) Σ_i ℓ(y_i wᵀx_i) + (Λ + extra_l2)/2 ‖w‖² + extra_linear_termᵀ w

Objective perturbation [CMS11]_ (Algorithm 2) passes ``extra_linear_term = b/n`` and
``extra_l2 = Δ``; output perturbation (Algorithm 1) passes neither. The privacy proofs of
both algorithms assume the *exact* minimiser, so :func:`solve_erm` runs damped Newton's
method until the Euclidean norm of the gradient is at most ``tol`` (default ``1e-10``), and
reports that residual. By (Λ + extra_l2)-strong convexity the returned ``w`` is then within
``tol / (Λ + extra_l2)`` of the exact minimiser in Euclidean norm (``docs/proofs/erm.md``).

Losses are value objects with the constants the privacy analysis needs: ``|ℓ'| ≤ 1``
(the Lipschitz constant) and ``|ℓ''| ≤ c`` (the smoothness ``c``).

References
----------
.. [CMS11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate. Differentially private empirical
   risk minimization. JMLR 12:1069-1109, 2011.
"""

from __future__ import annotations

import decimal
import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from ppdp._validation import check_int, check_nonnegative, check_positive
from ppdp.accounting.events import GammaNorm, ObjectivePerturbation, PrivacyEvent
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

__all__ = [
    "AUTO_TOL_FACTOR",
    "DEFAULT_MAX_ITER",
    "DEFAULT_RESIDUAL_SHARE",
    "DEFAULT_TOL",
    "FINISH_STEP_CAP",
    "ERMData",
    "ERMPartial",
    "ERMResult",
    "HuberLoss",
    "InMemoryERMData",
    "LogisticLoss",
    "Loss",
    "ObjectiveConstants",
    "OutputConstants",
    "PartitionedERMData",
    "ResidualConstants",
    "accelerated_finish",
    "auto_regularization",
    "certifiable_tol",
    "certified_gradient_bound",
    "check_finish",
    "erm_partition_terms",
    "finish_bounds",
    "finish_steps",
    "float_regularization_floor",
    "loss_from_dict",
    "noise_norm_bound",
    "objective_perturbation_constants",
    "objective_perturbation_release",
    "objective_perturbation_solutions",
    "output_perturbation_constants",
    "output_perturbation_release",
    "private_erm",
    "private_erm_data",
    "regularization_from_svm_c",
    "release_constants",
    "residual_constants",
    "rounding_allowance",
    "solve_erm",
    "solve_erm_batch",
]

#: Default bound on the gradient norm of the returned solution.
DEFAULT_TOL = 1e-10
#: Default number of Newton iterations (each with a backtracking line search).
DEFAULT_MAX_ITER = 500
#: Share of ε that objective perturbation gives to its certified residual step: the solver's
#: residual (and any float pattern of the objective noise) is covered by a small output
#: perturbation (``docs/proofs/erm.md``). At 1 % the objective noise grows by about 1 %.
DEFAULT_RESIDUAL_SHARE = 0.01
#: Newton runs to this fraction of ``tol``, so that the certificate (which adds a bound on
#: float64 rounding) usually holds at ``tol`` on the first try.
_NEWTON_TARGET = 0.25
#: Unit roundoff of float64.
_U = 2.0**-53
#: The most accelerated gradient steps the certified finish may need
#: (:func:`finish_steps`): parameters whose public bound exceeds it are refused before the
#: spend (:func:`check_finish`). A step is one certified gradient, O(n·d): about 0.2 ms at
#: n = 2,000, d = 6 in memory, one pass over the partitions of a distributed table.
FINISH_STEP_CAP = 100_000

Array = NDArray[np.float64]

_custodian = logging.getLogger("ppdp.custodian")


class Loss:
    """A convex margin loss ``ℓ(z)`` with ``|ℓ'(z)| ≤ 1`` and ``0 ≤ ℓ''(z) ≤ c``.

    Subclasses are frozen dataclasses implementing :meth:`value`, :meth:`derivative` and
    :meth:`second_derivative` (vectorised over arrays of margins ``z = y wᵀx``).
    """

    name: ClassVar[str] = "loss"
    #: Bound on |ℓ'|, the Lipschitz constant used by output perturbation's sensitivity.
    lipschitz: ClassVar[float] = 1.0

    @property
    def smoothness(self) -> float:
        """``c``, an upper bound on ``ℓ''`` (used by objective perturbation)."""
        raise NotImplementedError

    def value(self, z: Array) -> Array:
        raise NotImplementedError

    def derivative(self, z: Array) -> Array:
        raise NotImplementedError

    def second_derivative(self, z: Array) -> Array:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (name and parameters)."""
        return {"name": self.name}


@dataclass(frozen=True)
class LogisticLoss(Loss):
    """``ℓ(z) = log(1 + e^{−z})``: ``ℓ' = −1/(1 + e^z) ∈ (−1, 0)``, ``ℓ'' ≤ 1/4`` (c = 1/4).

    Examples
    --------
    >>> loss = LogisticLoss()
    >>> loss.smoothness
    0.25
    >>> float(loss.value(np.array([0.0]))[0]) == math.log(2)
    True
    """

    name: ClassVar[str] = "logistic"

    @property
    def smoothness(self) -> float:
        return 0.25

    def value(self, z: Array) -> Array:
        return np.logaddexp(0.0, -z)

    def derivative(self, z: Array) -> Array:
        return -expit(-z)

    def second_derivative(self, z: Array) -> Array:
        return expit(z) * expit(-z)


@dataclass(frozen=True)
class HuberLoss(Loss):
    """The Huber loss of [CMS11]_ eq. (7), a smoothed hinge with width ``h``.

    ``ℓ(z) = 0`` for ``z > 1 + h``; ``(1 + h − z)²/(4h)`` for ``|1 − z| ≤ h``; ``1 − z`` for
    ``z < 1 − h``. ``|ℓ'| ≤ 1`` and ``ℓ'' ∈ {0, 1/(2h)}``, so ``c = 1/(2h)``. ``ℓ''`` jumps at
    ``z = 1 ± h``; objective perturbation is still ε-DP there (CMS11 Cor. 13: the set of
    noise vectors whose solution puts a record on a kink has probability 0).

    Parameters
    ----------
    h : float, default 0.5
        Width of the quadratic piece; finite, > 0.

    Examples
    --------
    >>> HuberLoss(0.5).smoothness
    1.0
    >>> HuberLoss(0.5).value(np.array([0.0, 1.0, 2.0])).tolist()
    [1.0, 0.125, 0.0]
    """

    h: float = 0.5
    name: ClassVar[str] = "huber"

    def __post_init__(self) -> None:
        object.__setattr__(self, "h", check_positive("huber_h", self.h))

    @property
    def smoothness(self) -> float:
        return 1.0 / (2.0 * self.h)

    def value(self, z: Array) -> Array:
        h = self.h
        u = 1.0 + h - z
        quad = u * u / (4.0 * h)
        return np.where(z > 1.0 + h, 0.0, np.where(z < 1.0 - h, 1.0 - z, quad))

    def derivative(self, z: Array) -> Array:
        h = self.h
        return np.where(z > 1.0 + h, 0.0, np.where(z < 1.0 - h, -1.0, -(1.0 + h - z) / (2.0 * h)))

    def second_derivative(self, z: Array) -> Array:
        h = self.h
        return np.where((z >= 1.0 - h) & (z <= 1.0 + h), 1.0 / (2.0 * h), 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "h": self.h}


def loss_from_dict(data: dict[str, Any]) -> Loss:
    """Inverse of :meth:`Loss.to_dict` for the losses of this module."""
    name = data.get("name")
    if name == "logistic":
        return LogisticLoss()
    if name == "huber":
        return HuberLoss(float(data.get("h", 0.5)))
    raise ParameterError(f"loss ({name!r}) must be one of 'logistic', 'huber'")


def _objective(
    X: Array, y: Array, W: Array, loss: Loss, lam: float, T: Array, p: Array | None = None
) -> tuple[Array, Array]:
    """Objective values (m,) and margins (m, n) for the rows of ``W``.

    ``p`` are the record weights divided by their sum (``None``: uniform ``1/n``).
    """
    Z = (W @ X.T) * y
    data = loss.value(Z).mean(axis=1) if p is None else loss.value(Z) @ p
    J = data + 0.5 * lam * np.einsum("ij,ij->i", W, W)
    J = J + np.einsum("ij,ij->i", T, W)
    return J, Z


def _gradient(
    X: Array, y: Array, W: Array, Z: Array, loss: Loss, lam: float, T: Array, p: Array | None
) -> Array:
    yp = y / X.shape[0] if p is None else y * p
    return (loss.derivative(Z) * yp) @ X + lam * W + T


def _hessians(X: Array, Z: Array, loss: Loss, lam: float, p: Array | None) -> Array:
    n, d = X.shape
    S = loss.second_derivative(Z) / n if p is None else loss.second_derivative(Z) * p
    if S.shape[0] == 1:
        H = (X.T * S[0]) @ X
        H = H[None]
    else:
        H = np.einsum("mn,ni,nj->mij", S, X, X, optimize=True)
    H[:, np.arange(d), np.arange(d)] += lam
    return H


def solve_erm_batch(
    X: Array,
    y: Array,
    *,
    loss: Loss,
    regularization: float,
    extra_linear_terms: Array | None = None,
    extra_l2: float = 0.0,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    w0: Array | None = None,
    sample_weight: Array | None = None,
) -> tuple[Array, NDArray[np.bool_], dict[str, Any]]:
    """Solve ``m`` ERM problems on the same data that differ only in the linear term.

    Same objective as :func:`solve_erm`, one per row of ``extra_linear_terms`` (shape
    ``(m, d)``; ``None`` means one problem with no linear term). Newton's method with a
    per-problem backtracking (Armijo) line search; problems that reach ``‖∇J‖ ≤ tol`` stop
    being updated. Used by the audits, which need thousands of solves of a tiny problem.
    ``sample_weight`` (non-negative counts, shape (n,)) replaces ``1/n`` by
    ``weight_i / Σ weight``: ``k`` identical records become one row of weight ``k``.

    Returns
    -------
    W : ndarray, shape (m, d)
    converged : ndarray of bool, shape (m,)
    info : dict
        ``n_iter`` (Newton iterations of the slowest problem) and ``gradient_norm`` (m,).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    _n, d = X.shape
    p = None
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64)
        p = sw / sw.sum()
    lam = float(regularization) + float(extra_l2)
    T = np.zeros((1, d)) if extra_linear_terms is None else np.atleast_2d(extra_linear_terms)
    T = np.asarray(T, dtype=np.float64)
    m = T.shape[0]
    W = np.zeros((m, d)) if w0 is None else np.array(np.broadcast_to(w0, (m, d)), dtype=np.float64)
    J, Z = _objective(X, y, W, loss, lam, T, p)
    G = _gradient(X, y, W, Z, loss, lam, T, p)
    gnorm = np.sqrt(np.einsum("ij,ij->i", G, G))
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        active = np.flatnonzero(gnorm > tol)
        if active.size == 0:
            n_iter -= 1
            break
        Wa, Ga, Ja, Ta = W[active], G[active], J[active], T[active]
        H = _hessians(X, Z[active], loss, lam, p)
        P = np.linalg.solve(H, Ga[:, :, None])[:, :, 0]
        slope = np.einsum("ij,ij->i", Ga, P)  # > 0: P is a descent direction for -P
        step = np.ones(active.size)
        newW, newJ, newZ = Wa.copy(), Ja.copy(), Z[active].copy()
        todo = np.arange(active.size)
        for _ in range(60):
            cand = Wa[todo] - step[todo, None] * P[todo]
            cJ, cZ = _objective(X, y, cand, loss, lam, Ta[todo], p)
            armijo = cJ <= Ja[todo] - 1e-4 * step[todo] * slope[todo]
            # Near the optimum J stops resolving progress in float64: accept a full
            # Newton step that does not increase J beyond rounding.
            rounding = (step[todo] == 1.0) & (
                cJ <= Ja[todo] + 1e-13 * np.maximum(1.0, np.abs(Ja[todo]))
            )
            ok = armijo | rounding
            idx = todo[ok]
            newW[idx], newJ[idx], newZ[idx] = cand[ok], cJ[ok], cZ[ok]
            todo = todo[~ok]
            if todo.size == 0:
                break
            step[todo] *= 0.5
        W[active], J[active], Z[active] = newW, newJ, newZ
        G[active] = _gradient(X, y, newW, newZ, loss, lam, Ta, p)
        gnorm[active] = np.sqrt(np.einsum("ij,ij->i", G[active], G[active]))
    converged = gnorm <= tol
    return W, converged, {"n_iter": n_iter, "gradient_norm": gnorm}


def solve_erm(
    X: Array,
    y: Array,
    *,
    loss: Loss,
    regularization: float,
    extra_linear_term: Array | None = None,
    extra_l2: float = 0.0,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    w0: Array | None = None,
) -> tuple[Array, bool, dict[str, Any]]:
    """Minimise ``(1/n) Σ ℓ(y_i wᵀx_i) + (Λ + extra_l2)/2 ‖w‖² + extra_linear_termᵀ w``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Records (the private learners pass rows of norm ≤ 1).
    y : ndarray, shape (n,)
        Labels in ``{-1, +1}``.
    loss : Loss
        :class:`LogisticLoss`, :class:`HuberLoss` or another convex, twice
        differentiable (almost everywhere) margin loss.
    regularization : float
        Λ > 0, so the objective is Λ-strongly convex and the minimiser unique.
    extra_linear_term : ndarray, shape (d,), optional
        A vector ``t`` added as ``tᵀw`` (objective perturbation passes ``b/n``).
    extra_l2 : float, default 0.0
        Extra ridge ``Δ ≥ 0`` (objective perturbation's fallback).
    tol : float, default 1e-10
        Stop when ``‖∇J(w)‖₂ ≤ tol``; then ``‖w − w*‖₂ ≤ tol/(Λ + Δ)``.
    max_iter : int, default 500
        Newton iterations.
    w0 : ndarray, shape (d,), optional
        Starting point (default zero).

    Returns
    -------
    w : ndarray, shape (d,)
    converged : bool
        ``‖∇J(w)‖₂ ≤ tol``.
    info : dict
        ``n_iter``, ``gradient_norm`` (float) and ``objective`` (float).

    Notes
    -----
    Newton's method with an Armijo backtracking line search; each iteration costs one
    ``d × d`` Hessian (``O(n d²)``) and one solve. For a Λ-strongly convex objective with a
    Lipschitz Hessian (logistic) it converges globally and quadratically near the optimum.
    The Huber loss has a piecewise constant ``ℓ''``; the damped (semismooth) Newton steps
    still converge, in practice in a few iterations.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> y = np.array([1.0, -1.0, -1.0])
    >>> w, ok, info = solve_erm(X, y, loss=LogisticLoss(), regularization=0.1)
    >>> ok, info["gradient_norm"] <= 1e-10
    (True, True)
    """
    if not isinstance(loss, Loss):
        raise ParameterTypeError(f"loss ({type(loss).__name__}) must be a ppdp.learn Loss")
    lam = check_positive("regularization", regularization)
    extra = check_nonnegative("extra_l2", extra_l2)
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ParameterError(f"X (ndim {X.ndim}) must be a 2-D array")
    T = None
    if extra_linear_term is not None:
        T = np.asarray(extra_linear_term, dtype=np.float64).reshape(1, X.shape[1])
    W, conv, info = solve_erm_batch(
        X,
        y,
        loss=loss,
        regularization=lam,
        extra_linear_terms=T,
        extra_l2=extra,
        tol=tol,
        max_iter=max_iter,
        w0=w0,
    )
    w = W[0]
    Tv = np.zeros((1, X.shape[1])) if T is None else T
    J, _ = _objective(X, np.asarray(y, dtype=np.float64), W, loss, lam + extra, Tv)
    out = {
        "n_iter": int(info["n_iter"]),
        "gradient_norm": float(info["gradient_norm"][0]),
        "objective": float(J[0]),
    }
    if not math.isfinite(out["gradient_norm"]):
        conv = np.array([False])
    return w, bool(conv[0]), out


def _pairwise_column_sums(terms: Array) -> Array:
    """Column sums of ``terms`` (n, d) by numpy's pairwise summation, in row chunks.

    ``np.sum`` sums a contiguous axis pairwise (blocks of at most 128, then halving), so
    each chunk's sum has error at most ``(128 + ⌈log₂ n⌉)·u·Σ|x|``; the chunk sums are added
    with ``math.fsum`` (correctly rounded).
    """
    stacked = _pairwise_chunk_sums(terms)
    if stacked.shape[0] == 1:
        return np.asarray(stacked[0], dtype=np.float64)
    return _fsum_columns(stacked)


#: Rows per chunk of :func:`_pairwise_chunk_sums`.
_CHUNK_ROWS = 1 << 16


def _pairwise_chunk_sums(terms: Array) -> Array:
    """Column sums of ``terms`` (n, d) per chunk of :data:`_CHUNK_ROWS` rows, shape (k, d).

    Each chunk is summed by numpy's pairwise summation (error at most
    ``(128 + ⌈log₂ n⌉)·u·Σ|x|``, or ``(n − 1)·u·Σ|x|`` for a chunk of ``n ≤ 128`` rows);
    the caller adds the chunk sums with :func:`_fsum_columns` (correctly rounded). No rows:
    shape (0, d).
    """
    n, d = terms.shape
    parts = [
        np.ascontiguousarray(terms[i : i + _CHUNK_ROWS].T).sum(axis=1)
        for i in range(0, n, _CHUNK_ROWS)
    ]
    if not parts:
        return np.zeros((0, d))
    return np.asarray(np.array(parts), dtype=np.float64)


def _fsum_columns(stacked: Array) -> Array:
    """The correctly rounded column sums of ``stacked`` (k, d) (``math.fsum`` per column)."""
    return np.array([math.fsum(stacked[:, j]) for j in range(stacked.shape[1])], dtype=np.float64)


def rounding_allowance(
    n: int,
    dim: int,
    smoothness: float,
    strong_convexity: float,
    w_norm: Any,
    t_norm: Any,
) -> Any:
    """Bound on ``‖fl(∇J(w)) − ∇J(w)‖₂``: every rounding in computing the gradient in float64.

    For records of norm ≤ 1, ``|ℓ'| ≤ 1``, ``0 ≤ ℓ'' ≤ c``, unit roundoff u, weights ``p_i``
    summing to 1, ``‖w‖ ≤ w_norm`` and a linear term of norm ``t_norm`` (``fl(b/n)``, which
    also bounds its distance to the exact ``b/n`` by ``u·t_norm``):

    * margins ``y zᵀw`` (dot products of length d): error ≤ γ_d‖w‖ (Cauchy–Schwarz);
    * ``ℓ'`` at a perturbed margin: ≤ c·(γ_d + 2u)(‖w‖ + 2) + 7u per record (ℓ' is
      c-Lipschitz; its evaluation and the weight ``y_i p_i`` are accurate to a few ulp); in
      L2 over the coordinates ``‖Σ_i p_i e_i |z_i|‖ ≤ max_i e_i``;
    * the sum over the records, pairwise (:func:`_pairwise_column_sums`; a BLAS product with
      γ_n when n ≤ 128): ≤ γ_sum·‖Σ_i |a_i||z_i|‖ ≤ γ_sum;
    * the ridge, the linear term and the final additions: 3u relative each (the data term
      has norm ≤ 1).

    The first-order total is doubled to cover the second-order terms. Vectorised over
    ``w_norm`` and ``t_norm``.
    """
    gamma_d = (dim + 2) * _U
    gamma_sum = (n + 2) * _U if n <= 128 else (130 + math.ceil(math.log2(n))) * _U
    w = np.asarray(w_norm, dtype=np.float64)
    t = np.asarray(t_norm, dtype=np.float64)
    e_rec = float(smoothness) * (gamma_d + 2.0 * _U) * (w + 2.0) + 7.0 * _U
    total = (
        e_rec
        + (gamma_sum + 3.0 * _U) * (1.0 + 2.0 * _U)
        + 3.0 * _U * (float(strong_convexity) * w + t + 1.0)
    )
    return 2.0 * total


def certified_gradient_bound(
    X: Array,
    y: Array,
    W: Array,
    *,
    loss: Loss,
    regularization: float,
    extra_l2: float = 0.0,
    extra_linear_terms: Array | None = None,
    sample_weight: Array | None = None,
    w_norm_bound: Any = None,
) -> Array:
    """An upper bound on the *exact* ``‖∇J(w)‖₂`` at each row of ``W`` (shape (m, d)).

    ``J`` is :func:`solve_erm_batch`'s objective; the linear term of row ``k`` is
    ``extra_linear_terms[k]`` read as the exact real number it approximates (``b/n``
    rounded once). The bound is the float64 gradient's norm (records summed pairwise) plus
    :func:`rounding_allowance` at ``‖w‖ ≤ w_norm_bound`` (default: the row's own norm).
    Passing a bound that does not depend on the data (the private learners pass
    ``(1 + ‖b‖/n + tol)/μ``, from strong convexity) makes the allowance data-independent.
    ``tests/learn/test_erm.py`` checks the bound against an exact rational computation.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    n, d = X.shape
    m = W.shape[0]
    lam = float(regularization) + float(extra_l2)
    T = np.zeros((m, d)) if extra_linear_terms is None else np.atleast_2d(extra_linear_terms)
    T = np.broadcast_to(np.asarray(T, dtype=np.float64), (m, d))
    if sample_weight is None:
        p = np.full(n, 1.0 / n)
    else:
        sw = np.asarray(sample_weight, dtype=np.float64)
        p = sw / sw.sum()
    data = _certified_data_term(X, y, W, loss, p)
    return _bound_from_data_term(data, W, T, n=n, loss=loss, lam=lam, w_norm_bound=w_norm_bound)


def _certified_data_term(X: Array, y: Array, W: Array, loss: Loss, p: Array) -> Array:
    """``Σ_i p_i ℓ'(y_i wᵀx_i) y_i x_i`` at each row of ``W``, in the form
    :func:`rounding_allowance` bounds (a BLAS product up to 128 rows, pairwise sums beyond)."""
    n, d = X.shape
    m = W.shape[0]
    if n <= 128:
        return np.asarray((loss.derivative((W @ X.T) * y) * (y * p)) @ X, dtype=np.float64)
    data = np.empty((m, d))
    for k in range(m):
        a = loss.derivative((X @ W[k]) * y) * (y * p)
        data[k] = _pairwise_column_sums(X * a[:, None])
    return data


def _bound_from_data_term(
    data: Array, W: Array, T: Array, *, n: int, loss: Loss, lam: float, w_norm_bound: Any
) -> Array:
    """:func:`certified_gradient_bound` from the float64 data term ``Σ_i p_i ℓ'(·) y_i x_i``.

    ``data`` (m, d) must have been computed as that function does: margins by dot products,
    the weighted derivatives, the records summed pairwise (chunks, then ``math.fsum``).
    """
    return _gradient_and_bound(data, W, T, n=n, loss=loss, lam=lam, w_norm_bound=w_norm_bound)[1]


def _gradient_and_bound(
    data: Array, W: Array, T: Array, *, n: int, loss: Loss, lam: float, w_norm_bound: Any
) -> tuple[Array, Array]:
    """The float64 gradients ``data + λW + T`` (m, d) and :func:`_bound_from_data_term`."""
    d = W.shape[1]
    G = data + lam * W + T
    g_norm = np.sqrt(np.einsum("ij,ij->i", G, G)) * (1.0 + (d + 2) * _U)
    w_norm = np.sqrt(np.einsum("ij,ij->i", W, W)) if w_norm_bound is None else w_norm_bound
    t_norm = np.sqrt(np.einsum("ij,ij->i", T, T))
    allowance = rounding_allowance(n, d, loss.smoothness, lam, w_norm, t_norm)
    return G, np.asarray(g_norm + allowance, dtype=np.float64)


def _gradient_of(
    data: Array,
    W: Array,
    linear_term: Array | None,
    *,
    n: int,
    loss: Loss,
    regularization: float,
    extra_l2: float,
    w_norm_bound: Any,
) -> tuple[Array, Array]:
    """:func:`_gradient_and_bound` with the solvers' arguments (no linear term: zero)."""
    T = np.zeros((1, W.shape[1])) if linear_term is None else np.atleast_2d(linear_term)
    lam = float(regularization) + float(extra_l2)
    return _gradient_and_bound(data, W, T, n=n, loss=loss, lam=lam, w_norm_bound=w_norm_bound)


def noise_norm_bound(dim: int, scale: float) -> float:
    """A public bound on ‖b‖ for ``‖b‖ ~ Gamma(dim, scale)``: exceeded with probability 2⁻⁴⁰."""
    from scipy.stats import gamma

    return float(gamma.isf(2.0**-40, dim, scale=scale))


def certifiable_tol(
    tol: float, n: int, dim: int, smoothness: float, strong_convexity: float, t_norm: float
) -> float:
    """``max(tol, 4·allowance)``: the smallest residual float64 can certify, from public values.

    The allowance is :func:`rounding_allowance` at the public bound
    ``‖w‖ ≤ (1 + t_norm + tol)/μ`` (μ-strong convexity: ``‖w*‖ ≤ ‖∇J(0)‖/μ`` and
    ``‖∇J(0)‖ ≤ 1 + ‖t‖``), where ``t_norm`` bounds the linear term's norm
    (:func:`noise_norm_bound`/n for objective perturbation, 0 for output perturbation).
    With the residual at least four allowances, a solve that reaches a float64 gradient norm
    of ``tol/4`` is always certified: a refusal then means a solver that did not converge,
    never a rounding limit.
    """
    mu = float(strong_convexity)
    w_bound = (1.0 + float(t_norm) + float(tol)) / mu
    allowance = float(rounding_allowance(n, dim, smoothness, mu, w_bound, t_norm))
    return max(float(tol), 4.0 * allowance)


# --------------------------------------------------------------------------- the certified finish


def _smoothness_bound(smoothness: float, strong_convexity: float) -> float:
    """L ≥ c + μ: the objective's smoothness for records of norm ≤ 1 and weights summing to
    1, with a relative margin of 1e-9 for records clipped to norm 1 in float64."""
    return (float(smoothness) + float(strong_convexity)) * (1.0 + 1e-9)


def finish_steps(
    smoothness: float, strong_convexity: float, gradient_at_zero: float, tol: float
) -> int:
    """K: accelerated gradient steps after which ``‖∇J‖ ≤ tol/4`` in exact arithmetic.

    ``J`` is μ-strongly convex and L-smooth (:func:`_smoothness_bound`), κ = L/μ. Nesterov's
    method with constant momentum ``(√κ − 1)/(√κ + 1)`` and step ``1/L`` from a point with
    ``‖∇J(x₀)‖ ≤ G₀`` (``gradient_at_zero``: ``|ℓ'| ≤ 1`` plus the linear term's norm, public)
    satisfies ``J(x_k) − J* ≤ (L + μ)/2·‖x₀ − x*‖²·e^{−k/√κ}`` (Bubeck 2015, Thm 3.18), with
    ``‖x₀ − x*‖ ≤ G₀/μ`` (strong convexity) and ``‖∇J‖² ≤ 2L(J − J*)`` (smoothness), so
    ``‖∇J(x_k)‖² ≤ κ(κ + 1)·G₀²·e^{−k/√κ}``; K is the least k that makes it ``≤ (tol/4)²``.
    Public: it depends on the loss, Λ (+ Δ), the bound G₀ and tol only
    (``docs/proofs/erm.md``, *The certified finish*).

    Examples
    --------
    >>> finish_steps(0.25, 0.25, 1.0, 4.0)
    3
    >>> finish_steps(0.25, 1e-3, 1.0, 1e-10)
    949
    """
    mu = float(strong_convexity)
    kappa = _smoothness_bound(smoothness, mu) / mu
    ratio = kappa * (kappa + 1.0) * (float(gradient_at_zero) / (float(tol) / 4.0)) ** 2
    if not ratio > 1.0:
        return 0
    return math.ceil(math.sqrt(kappa) * math.log(ratio) * (1.0 + 1e-12))


def check_finish(
    *,
    smoothness: float,
    strong_convexity: float,
    gradient_at_zero: float,
    tol: float,
    n: int,
    dim: int,
    what: str,
    fix: str,
) -> int:
    """Refuse, before the spend, parameters whose certified finish is not sure to come out.

    Two public conditions: the finish's step bound :func:`finish_steps` is at most
    :data:`FINISH_STEP_CAP`, and float64 can certify ``tol`` at the public bound
    ``‖w‖ ≤ (G₀ + tol)/μ``: three rounding allowances fit in ``tol``, so an exact gradient
    norm of ``tol/4`` certifies (``(tol/4 + a)(1 + (d+2)u) + a < tol``). For the linear
    learners :func:`certifiable_tol` makes the second automatic. ``what`` names the
    caller's parameters with their values, ``fix`` says what to change. Returns K.

    Raises
    ------
    ParameterError
        One line with the public numbers: K, the cap, κ and what to change.
    """
    mu = float(strong_convexity)
    g0 = float(gradient_at_zero)
    steps = finish_steps(smoothness, mu, g0, tol)
    kappa = _smoothness_bound(smoothness, mu) / mu
    if steps > FINISH_STEP_CAP:
        raise ParameterError(
            f"{what}: a certified solve may need up to {steps:,} accelerated gradient steps "
            f"after the Newton iterations (condition number κ = {kappa:.3g}, certified "
            f"gradient norm {tol:.3g}), more than the cap of {FINISH_STEP_CAP:,}; {fix}"
        )
    allowance = float(rounding_allowance(n, dim, smoothness, mu, (g0 + tol) / mu, g0 - 1.0))
    if not 3.0 * allowance <= tol:
        raise ParameterError(
            f"{what}: float64 cannot certify the gradient norm {tol:.3g} at this condition "
            f"(rounding allowance {allowance:.3g} per gradient, κ = {kappa:.3g}); {fix}"
        )
    return steps


def accelerated_finish(
    data: ERMData,
    *,
    loss: Loss,
    regularization: float,
    extra_l2: float,
    linear_term: Array | None,
    tol: float,
    steps: int,
) -> tuple[Array, float, int]:
    """Nesterov's accelerated gradient method on ``data``'s objective until certified.

    Starts at zero (``‖∇J(0)‖ ≤ G₀ = 1 + ‖linear_term‖``) and runs at most ``steps``
    (:func:`finish_steps`) steps of step ``1/L`` and momentum ``(√κ − 1)/(√κ + 1)``,
    stopping at the first point whose certified gradient norm (:meth:`ERMData.gradient`) is
    at most ``tol``. Returns ``(w, certified bound at w, steps taken)``; the steps taken
    depend on the data and are for the custodian's log only. In exact arithmetic the last
    point's gradient norm is at most ``tol/4``, so the certificate holds
    (``docs/proofs/erm.md``, *The certified finish*). The start does not depend on how
    the records are held or on the Newton iterations before, so the in-memory and the
    partitioned finish take the same steps up to the rounding of the sums.
    """
    d = data.dim
    mu = float(regularization) + float(extra_l2)
    L = _smoothness_bound(loss.smoothness, mu)
    kw = {"loss": loss, "regularization": regularization, "extra_l2": extra_l2}

    def gradient(w: Array) -> tuple[Array, float]:
        return data.gradient(w, linear_term=linear_term, w_norm_bound=None, **kw)

    root = math.sqrt(L / mu)
    beta = (root - 1.0) / (root + 1.0)
    x = y = np.zeros(d)
    G, bound = gradient(y)
    for k in range(int(steps)):
        if bound <= tol:
            return y, bound, k
        x_next = y - G / L
        y = x_next + beta * (x_next - x)
        x = x_next
        G, bound = gradient(y)
    if bound <= tol:
        return y, bound, int(steps)
    _, bound = gradient(x)  # x_K: the point the convergence bound is about
    return x, bound, int(steps)


# --------------------------------------------------------------------------- the two mechanisms


@dataclass(frozen=True)
class ResidualConstants:
    """The certified residual step of objective perturbation (``docs/proofs/erm.md``).

    The solver returns ``w̃`` with a certified ``‖∇J(w̃)‖ ≤ tol``, hence
    ``‖w̃ − w*‖ ≤ tol/μ`` by μ-strong convexity (μ = Λ + Δ). The released vector is
    ``snap(w̃, Λ_g) + v`` with ``‖v‖ ~ Gamma(d, noise_scale)`` on the grid Λ_g: for two
    centres within ``2·tol/μ`` of the same exact minimiser this is ``epsilon``-DP.

    Attributes
    ----------
    epsilon : float
        The share of ε spent on this step.
    sensitivity : float
        ``2·tol/μ``.
    granularity : float
        Λ_g, the grid of the centre and of ``v``.
    noise_scale : float
        ``(sensitivity + Λ_g √d)/epsilon``.
    """

    epsilon: float
    tol: float
    strong_convexity: float
    dim: int
    sensitivity: float
    granularity: float
    noise_scale: float

    @property
    def event(self) -> GammaNorm:
        """The accounting event of this step: a Gamma-norm draw on the grid Λ_g at ε_r."""
        return GammaNorm(
            l2_sensitivity=self.sensitivity,
            scale=self.noise_scale,
            dimension=self.dim,
            granularity=self.granularity,
            epsilon=self.epsilon,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "residual_epsilon": self.epsilon,
            "residual_tol": self.tol,
            "residual_sensitivity": self.sensitivity,
            "residual_granularity": self.granularity,
            "residual_noise_norm_scale": self.noise_scale,
        }


def residual_constants(
    epsilon: float, tol: float, strong_convexity: float, dim: int
) -> ResidualConstants:
    """Constants of the certified residual step for a μ-strongly convex objective.

    Examples
    --------
    >>> k = residual_constants(0.01, 1e-10, 1e-3, 2)
    >>> k.sensitivity
    2e-07
    >>> k.noise_scale > k.sensitivity / 0.01
    True
    """
    from ppdp import noise

    eps = check_positive("residual epsilon", epsilon)
    mu = check_positive("strong_convexity", strong_convexity)
    t = check_positive("tol", tol)
    d = check_int("dim", dim, minimum=1)
    sens = 2.0 * t / mu
    grid = noise.granularity(sens / eps)
    return ResidualConstants(
        epsilon=eps,
        tol=t,
        strong_convexity=mu,
        dim=d,
        sensitivity=sens,
        granularity=grid,
        noise_scale=(sens + grid * math.sqrt(d)) / eps,
    )


@dataclass(frozen=True)
class ObjectiveConstants:
    """Constants of objective perturbation ([CMS11]_ Algorithm 2) for one fit.

    Attributes
    ----------
    epsilon : float
        ε_p, the whole guarantee (objective part plus the residual step, if any).
    epsilon_prime : float
        ε'_p: ``ε_obj − 2 log(1 + cR²/(nΛ))`` when positive, else ``ε_obj/2`` (fallback),
        where ``ε_obj`` is ``epsilon`` minus the residual step's share.
    ridge : float
        Δ: ``0`` when ε' > 0 from the first formula, else ``cR²/(n(e^{ε/4} − 1)) − Λ``.
    noise_scale : float
        ``2R/ε'``: the noise ``b`` has density ∝ ``exp(−‖b‖/noise_scale)``, so
        ``‖b‖ ~ Gamma(d, noise_scale)``.
    fallback : bool
        True when the Δ branch was taken.
    residual : ResidualConstants or None
        The certified residual step (``None``: CMS11's idealised mechanism alone, which
        assumes the exact minimiser and a continuous noise; used by the analysis only).
    """

    epsilon: float
    n: int
    regularization: float
    smoothness: float
    radius: float
    epsilon_prime: float
    ridge: float
    noise_scale: float
    fallback: bool
    residual: ResidualConstants | None = None

    @property
    def epsilon_objective(self) -> float:
        """The ε of the objective-perturbation part (ε minus the residual step's share)."""
        if self.residual is None:
            return self.epsilon
        return _split_rest(self.epsilon, self.residual.epsilon)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The accounting events of the two draws, in order.

        The objective noise ``b`` (Algorithm 2 at ``ε_obj``) and, with the certified
        residual step, its Gamma-norm output noise ``v`` at ``ε_r``: an adaptive
        composition (``docs/proofs/erm.md``, *What ppdp releases*).
        """
        first = ObjectivePerturbation(epsilon=self.epsilon_objective)
        if self.residual is None:
            return (first,)
        return (first, self.residual.event)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "epsilon_objective": self.epsilon_objective,
            "epsilon_prime": self.epsilon_prime,
            "ridge_delta": self.ridge,
            "noise_norm_scale": self.noise_scale,
            "fallback": self.fallback,
            "smoothness_c": self.smoothness,
            "radius": self.radius,
        }
        if self.residual is not None:
            out.update(self.residual.to_dict())
        return out


def _split_rest(total: float, part: float) -> float:
    """The largest float ``r <= total − part`` whose shortest decimal plus ``part``'s is at
    most ``total``'s: the ledger adds the two draws' ε in that decimal form, so the split
    costs exactly ``total`` there too (``fl(total − part)`` can exceed it by one ulp).
    """
    room = decimal.Decimal(repr(total)) - decimal.Decimal(repr(part))
    rest = min(total - part, float(room))
    while decimal.Decimal(repr(rest)) > room:
        rest = math.nextafter(rest, 0.0)
    return rest


def objective_perturbation_constants(
    epsilon: float,
    n: int,
    regularization: float,
    smoothness: float,
    *,
    radius: float = 1.0,
    dim: int | None = None,
    tol: float | None = None,
    residual_share: float = DEFAULT_RESIDUAL_SHARE,
) -> ObjectiveConstants:
    """ε', Δ and the noise scale of [CMS11]_ Algorithm 2 (JMLR version, errata in A.9).

    For records of norm ≤ R and ``0 ≤ ℓ'' ≤ c`` the Jacobian ratio is at most
    ``(1 + cR²/(n(Λ+Δ)))²`` and the noise difference ``‖b − b'‖ ≤ 2R``.

    With ``dim`` and ``tol`` (what :func:`private_erm` releases) ``residual_share · ε``
    goes to the certified residual step (:func:`residual_constants` with μ = Λ + Δ and the
    residual :func:`certifiable_tol`, at least ``tol``) and Algorithm 2's constants use the
    rest. Without them: Algorithm 2 alone, at the whole ε
    (the idealised mechanism of the analysis).

    Examples
    --------
    >>> k = objective_perturbation_constants(1.0, 1000, 0.01, 0.25)
    >>> k.fallback, k.ridge, round(k.epsilon_prime, 6)
    (False, 0.0, 0.950615)
    >>> k = objective_perturbation_constants(0.1, 100, 0.001, 0.25)
    >>> k.fallback, k.epsilon_prime
    (True, 0.05)
    >>> k = objective_perturbation_constants(1.0, 1000, 0.01, 0.25, dim=3, tol=1e-10)
    >>> k.residual.epsilon, round(k.epsilon_objective, 12), round(k.epsilon_prime, 6)
    (0.01, 0.99, 0.940615)
    """
    if (dim is None) != (tol is None):
        raise ParameterError("dim and tol must be given together (the certified residual step)")
    total = float(epsilon)
    eps = total
    residual_eps = 0.0
    if dim is not None:
        share = float(residual_share)
        if not 0.0 < share < 1.0:
            raise ParameterError(f"residual_share ({residual_share!r}) must be in (0, 1)")
        residual_eps = total * share
        eps = _split_rest(total, residual_eps)
    lam = float(regularization)
    cr2 = float(smoothness) * float(radius) ** 2
    eps_prime = eps - 2.0 * math.log1p(cr2 / (n * lam))
    ridge = 0.0
    fallback = eps_prime <= 0.0
    if fallback:
        ridge = cr2 / (n * math.expm1(eps / 4.0)) - lam
        # In this branch ridge > 0 in exact arithmetic; keep Λ + Δ from rounding up
        # past the value that makes the Jacobian factor exactly e^{ε/2}.
        ridge = max(ridge, 0.0)
        eps_prime = eps / 2.0
    residual = None
    if dim is not None and tol is not None:
        mu = lam + ridge
        t_bound = noise_norm_bound(dim, 2.0 * float(radius) / eps_prime) / int(n)
        tau = certifiable_tol(tol, int(n), dim, float(smoothness), mu, t_bound)
        residual = residual_constants(residual_eps, tau, mu, dim)
    return ObjectiveConstants(
        epsilon=total,
        n=int(n),
        regularization=lam,
        smoothness=float(smoothness),
        radius=float(radius),
        epsilon_prime=eps_prime,
        ridge=ridge,
        noise_scale=2.0 * float(radius) / eps_prime,
        fallback=fallback,
        residual=residual,
    )


@dataclass(frozen=True)
class OutputConstants:
    """Constants of output perturbation ([CMS11]_ Algorithm 1) for one fit.

    Attributes
    ----------
    sensitivity : float
        L2 sensitivity of the released (approximate) minimiser:
        ``2RL/(nΛ) + 2·tol/Λ`` (exact-minimiser bound plus the solver's allowance).
    granularity : float
        The grid Λ_g of :func:`ppdp.noise.gamma_norm_vector`; the minimiser is snapped to it.
    noise_scale : float
        ``(sensitivity + Λ_g √d)/ε``; ``‖b‖ ~ Gamma(d, noise_scale)``.
    """

    epsilon: float
    n: int
    regularization: float
    lipschitz: float
    radius: float
    tol: float
    dim: int
    sensitivity: float
    granularity: float
    noise_scale: float

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The accounting event of the one draw: Gamma-norm noise on the grid Λ_g at ε."""
        return (
            GammaNorm(
                l2_sensitivity=self.sensitivity,
                scale=self.noise_scale,
                dimension=self.dim,
                granularity=self.granularity,
                epsilon=self.epsilon,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sensitivity": self.sensitivity,
            "norm": "L2",
            "granularity": self.granularity,
            "noise_norm_scale": self.noise_scale,
            "solver_tol": self.tol,
            "radius": self.radius,
        }


def output_perturbation_constants(
    epsilon: float,
    n: int,
    regularization: float,
    dim: int,
    *,
    lipschitz: float = 1.0,
    radius: float = 1.0,
    tol: float = 0.0,
) -> OutputConstants:
    """Sensitivity and noise scale of [CMS11]_ Algorithm 1.

    CMS11 Cor. 8: ``‖argmin J(D) − argmin J(D')‖ ≤ 2LR/(nΛ)`` for replace-one neighbours.
    The solver returns ``w`` with ``‖∇J(w)‖ ≤ tol``, hence ``‖w − w*‖ ≤ tol/Λ`` on each side:
    ``+ 2 tol/Λ``. Snapping to the grid adds ``Λ_g √d`` (``docs/proofs/noise.md``).

    Examples
    --------
    >>> k = output_perturbation_constants(1.0, 100, 0.1, 3)
    >>> k.sensitivity
    0.2
    >>> k.noise_scale > 0.2
    True
    """
    from ppdp import noise

    eps = float(epsilon)
    lam = float(regularization)
    sens = 2.0 * float(lipschitz) * float(radius) / (n * lam) + 2.0 * float(tol) / lam
    grid = noise.granularity(sens / eps)
    return OutputConstants(
        epsilon=eps,
        n=int(n),
        regularization=lam,
        lipschitz=float(lipschitz),
        radius=float(radius),
        tol=float(tol),
        dim=int(dim),
        sensitivity=sens,
        granularity=grid,
        noise_scale=(sens + grid * math.sqrt(dim)) / eps,
    )


@dataclass(frozen=True)
class ERMResult:
    """One private fit: the released weights and how they were made.

    Every field is public: ``converged`` is True, ``gradient_norm`` is the certified τ and
    ``n_iter`` the public bound ``max_iter + K`` on the iterations (issue 29: the counts
    taken depend on the data and go to the custodian's log only).
    """

    coef: Array
    converged: bool
    gradient_norm: float
    n_iter: int
    constants: ObjectiveConstants | OutputConstants


def objective_perturbation_solutions(
    Z: Array,
    y: Array,
    *,
    loss: Loss,
    constants: ObjectiveConstants,
    noise: Array,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    sample_weight: Array | None = None,
    w0: Array | None = None,
) -> tuple[Array, NDArray[np.bool_], dict[str, Any]]:
    """Step 4 of Algorithm 2 for each noise vector (rows of ``noise``, shape (m, d)).

    ``argmin_w (1/n) Σ ℓ(y_i wᵀz_i) + Λ/2‖w‖² + bᵀw/n + Δ/2‖w‖²`` with ``n`` and Λ, Δ from
    ``constants``. :func:`private_erm` calls it with one vector; the audits with many
    (``w0``, a warm start such as the unperturbed minimiser, only changes the speed).
    """
    return solve_erm_batch(
        Z,
        y,
        loss=loss,
        regularization=constants.regularization,
        extra_linear_terms=np.atleast_2d(noise) / constants.n,
        extra_l2=constants.ridge,
        tol=tol,
        max_iter=max_iter,
        sample_weight=sample_weight,
        w0=w0,
    )


def objective_perturbation_release(
    Z: Array,
    y: Array,
    *,
    loss: Loss,
    constants: ObjectiveConstants,
    noise: Array,
    residual_noise: Array,
    max_iter: int = DEFAULT_MAX_ITER,
    sample_weight: Array | None = None,
    w0: Array | None = None,
) -> tuple[Array, NDArray[np.bool_], dict[str, Any]]:
    """Objective perturbation with its certified residual step, one release per noise row.

    For each row ``b`` of ``noise`` (continuous law, :func:`ppdp.noise.gamma_norm_vector`
    with ``rounded=False``) and ``v`` of ``residual_noise`` (on the grid
    ``constants.residual.granularity``): solve Algorithm 2's objective to a *certified*
    gradient norm ``≤ tol`` (:func:`certified_gradient_bound`), then release
    ``snap(w̃, Λ_g) + v``. Returns the releases (m, d), per row whether the certificate
    holds (a row without it must not be released: ``docs/proofs/erm.md``), and the
    custodian-side diagnostics ``n_iter`` and ``gradient_bound`` (data-dependent: never
    released).
    """
    res = constants.residual
    if res is None:
        raise ParameterError(
            "constants must include the certified residual step: build them with dim and tol"
        )
    from ppdp import noise as _noise

    B = np.atleast_2d(np.asarray(noise, dtype=np.float64))
    W, _, info = objective_perturbation_solutions(
        Z,
        y,
        loss=loss,
        constants=constants,
        noise=B,
        tol=res.tol * _NEWTON_TARGET,
        max_iter=max_iter,
        sample_weight=sample_weight,
        w0=w0,
    )
    T = B / constants.n
    mu = constants.regularization + constants.ridge
    # ‖w‖ ≤ (1 + ‖b‖/n + tol)/μ by strong convexity: a bound free of the data.
    w_bound = (1.0 + np.sqrt(np.einsum("ij,ij->i", T, T)) + res.tol) / mu
    bound = certified_gradient_bound(
        Z,
        y,
        W,
        loss=loss,
        regularization=constants.regularization,
        extra_l2=constants.ridge,
        extra_linear_terms=T,
        sample_weight=sample_weight,
        w_norm_bound=w_bound,
    )
    certified = np.isfinite(bound) & (bound <= res.tol) & np.all(np.isfinite(W), axis=1)
    W = np.where(certified[:, None], W, 0.0)  # never snap a non-finite value
    released = _noise.snap(W, res.granularity, name="coef") + np.atleast_2d(residual_noise)
    diagnostics = {"n_iter": int(info["n_iter"]), "gradient_bound": bound}
    return np.asarray(released, dtype=np.float64), certified, diagnostics


def output_perturbation_release(w_star: Array, constants: OutputConstants, noise: Array) -> Array:
    """Step 3 of Algorithm 1: ``snap(w*, Λ_g) + b`` for each noise vector (rows, (m, d))."""
    from ppdp import noise as _noise

    return np.asarray(
        _noise.snap(w_star, constants.granularity, name="coef") + np.atleast_2d(noise),
        dtype=np.float64,
    )


def release_constants(
    n: int,
    dim: int,
    *,
    loss: Loss,
    epsilon: float,
    regularization: float,
    perturbation: str,
    tol: float = DEFAULT_TOL,
    residual_share: float = DEFAULT_RESIDUAL_SHARE,
) -> ObjectiveConstants | OutputConstants:
    """The constants :func:`private_erm` draws its noise with, from public values alone.

    Their ``events`` are what a fit of ``n`` records of ``dim`` coordinates charges.

    Examples
    --------
    >>> k = release_constants(1000, 3, loss=LogisticLoss(), epsilon=1.0,
    ...                       regularization=0.01, perturbation="output")
    >>> [type(e).__name__ for e in k.events]
    ['GammaNorm']
    >>> k = release_constants(1000, 3, loss=LogisticLoss(), epsilon=1.0,
    ...                       regularization=0.01, perturbation="objective")
    >>> [type(e).__name__ for e in k.events]
    ['ObjectivePerturbation', 'GammaNorm']
    """
    if perturbation == "objective":
        return objective_perturbation_constants(
            epsilon,
            n,
            regularization,
            loss.smoothness,
            dim=dim,
            tol=tol,
            residual_share=residual_share,
        )
    if perturbation == "output":
        tau = certifiable_tol(tol, n, dim, loss.smoothness, regularization, 0.0)
        return output_perturbation_constants(
            epsilon, n, regularization, dim, lipschitz=loss.lipschitz, tol=tau
        )
    raise ParameterError(f"perturbation ({perturbation!r}) must be 'objective' or 'output'")


def finish_bounds(constants: ObjectiveConstants | OutputConstants) -> tuple[float, float, float]:
    """``(μ, G₀, τ)`` of a fit's certified finish, from its public constants.

    μ = Λ + Δ, the certified gradient norm τ, and the public bound ``G₀ = 1 + ‖b‖/n`` on
    ``‖∇J(0)‖`` (objective perturbation: ``‖b‖`` at :func:`noise_norm_bound`; output
    perturbation: no linear term, ``G₀ = 1``).
    """
    if isinstance(constants, ObjectiveConstants):
        res = constants.residual
        if res is None:
            raise ParameterError("constants must include the certified residual step")
        t_bound = noise_norm_bound(res.dim, constants.noise_scale) / constants.n
        return constants.regularization + constants.ridge, 1.0 + t_bound, res.tol
    return constants.regularization, 1.0, constants.tol


def private_erm(
    Z: Array,
    y: Array,
    *,
    loss: Loss,
    epsilon: float,
    regularization: float,
    perturbation: str,
    random_state: Any,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    residual_share: float = DEFAULT_RESIDUAL_SHARE,
    sample_weight: Array | None = None,
    n_units: int | None = None,
) -> ERMResult:
    """ε-DP linear ERM on records ``Z`` of norm ≤ 1 and labels ±1 (replace-one, n public).

    ``sample_weight`` and ``n_units`` (a privacy unit, output perturbation): row ``i`` of
    person ``p`` weighs ``1/rows_p``, the ``n_units`` persons' terms are their average losses,
    and the constants are those of ``n_units`` records (``docs/proofs/privacy-unit.md`` §6).

    ``perturbation="objective"`` is [CMS11]_ Algorithm 2 with a continuous noise vector
    and the certified residual step (:func:`objective_perturbation_release`; it spends
    ``residual_share · ε``); ``"output"`` is Algorithm 1. The caller validates the
    parameters and spends the budget first. :func:`private_erm_data` is the same release on
    records held elsewhere (partitions of a distributed table).

    Newton runs at most ``max_iter`` iterations; if its point is not certified to
    ``‖∇J‖ ≤ τ`` (``τ = certifiable_tol(tol, ...) ≥ tol``, public), the certified finish
    (:func:`accelerated_finish`) completes the solve in at most :func:`finish_steps` steps,
    after which exact arithmetic guarantees the certificate. The result's ``n_iter``
    (``max_iter`` plus the public step bound) and ``gradient_norm`` (τ) are public.

    Raises
    ------
    ConvergenceError
        Only if the certificate still fails after the finish: a floating-point failure of
        its convergence bound. Nothing is released, ε was charged, and the message carries
        public numbers only (``docs/proofs/erm.md``, *The certified finish*).
    """
    return private_erm_data(
        InMemoryERMData(Z, y, sample_weight=sample_weight, n=n_units),
        loss=loss,
        epsilon=epsilon,
        regularization=regularization,
        perturbation=perturbation,
        random_state=random_state,
        tol=tol,
        max_iter=max_iter,
        residual_share=residual_share,
    )


def private_erm_data(
    data: ERMData,
    *,
    loss: Loss,
    epsilon: float,
    regularization: float,
    perturbation: str,
    random_state: Any,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    residual_share: float = DEFAULT_RESIDUAL_SHARE,
) -> ERMResult:
    """:func:`private_erm` on an :class:`ERMData` (records in memory or in partitions).

    The noise is drawn here, from ``random_state``, in the same order whatever holds the
    records (objective perturbation: ``b`` then the residual noise ``v``, both before the
    solve; output perturbation: ``b`` after the certified solve), so one seed gives one
    release up to the solver's certified tolerance (``docs/proofs/erm.md``, *Distributed
    input*).
    """
    from ppdp import noise
    from ppdp.exceptions import ConvergenceError

    n, d = data.n, data.dim
    if perturbation == "objective":
        k_obj = release_constants(
            n,
            d,
            loss=loss,
            epsilon=epsilon,
            regularization=regularization,
            perturbation=perturbation,
            tol=tol,
            residual_share=residual_share,
        )
        assert isinstance(k_obj, ObjectiveConstants) and k_obj.residual is not None
        b = noise.gamma_norm_vector(
            d, k_obj.noise_scale, size=1, random_state=random_state, rounded=False
        )
        v = noise.gamma_norm_vector(
            d,
            k_obj.residual.noise_scale,
            size=1,
            random_state=random_state,
            granularity=k_obj.residual.granularity,
        )
        res = k_obj.residual
        T = np.atleast_2d(b) / k_obj.n  # Algorithm 2's bᵀw/n, rounded once
        w_tilde, sinfo = data.solve(
            loss=loss,
            regularization=k_obj.regularization,
            extra_l2=k_obj.ridge,
            linear_term=T,
            tol=res.tol * _NEWTON_TARGET,
            max_iter=max_iter,
        )
        mu = k_obj.regularization + k_obj.ridge
        # ‖w‖ ≤ (1 + ‖b‖/n + tol)/μ by strong convexity: a bound free of the data.
        w_bound = (1.0 + np.sqrt(np.einsum("ij,ij->i", T, T)) + res.tol) / mu
        bound = data.certify(
            w_tilde,
            loss=loss,
            regularization=k_obj.regularization,
            extra_l2=k_obj.ridge,
            linear_term=T,
            w_norm_bound=w_bound,
        )
        ok = bool(np.isfinite(bound) and bound <= res.tol and np.all(np.isfinite(w_tilde)))
        if not ok:
            w_tilde, ok = _finish(data, loss, k_obj.regularization, k_obj.ridge, T, res.tol, sinfo)
        W = np.atleast_2d(w_tilde) if ok else np.zeros((1, d))  # never snap a non-finite value
        released = noise.snap(W, res.granularity, name="coef") + np.atleast_2d(v)
        w = np.asarray(released, dtype=np.float64)[0]
        constants: ObjectiveConstants | OutputConstants = k_obj
    elif perturbation == "output":
        k_out = release_constants(
            n,
            d,
            loss=loss,
            epsilon=epsilon,
            regularization=regularization,
            perturbation=perturbation,
            tol=tol,
        )
        assert isinstance(k_out, OutputConstants)
        tau = k_out.tol
        w_star, sinfo = data.solve(
            loss=loss,
            regularization=regularization,
            extra_l2=0.0,
            linear_term=None,
            tol=tau * _NEWTON_TARGET,
            max_iter=max_iter,
        )
        bound = data.certify(
            w_star,
            loss=loss,
            regularization=regularization,
            extra_l2=0.0,
            linear_term=None,
            w_norm_bound=(1.0 + tau) / regularization,
        )
        ok = bool(np.isfinite(bound) and bound <= tau and np.all(np.isfinite(w_star)))
        if not ok:
            w_star, ok = _finish(data, loss, regularization, 0.0, None, tau, sinfo)
        b = noise.gamma_norm_vector(
            d, k_out.noise_scale, size=1, random_state=random_state, granularity=k_out.granularity
        )
        w = output_perturbation_release(w_star, k_out, b)[0] if ok else w_star
        constants = k_out
    else:  # pragma: no cover - validated by the estimators
        raise ParameterError(f"perturbation ({perturbation!r}) must be 'objective' or 'output'")
    mu, g0, certified_tol = finish_bounds(constants)
    public_steps = finish_steps(loss.smoothness, mu, g0, certified_tol)
    if not ok:
        raise ConvergenceError(
            f"the ERM solver did not certify the gradient norm {certified_tol:g} after "
            f"max_iter={max_iter} Newton iterations and its {public_steps:,} accelerated "
            "gradient steps, which exact arithmetic guarantees (docs/proofs/erm.md): a "
            "floating-point failure, please report it; nothing was released and ε was charged"
        )
    # Public values only: the certified tolerance and the public bound on the iterations.
    return ERMResult(
        coef=np.asarray(w, dtype=np.float64),
        converged=True,
        gradient_norm=certified_tol,
        n_iter=int(max_iter) + public_steps,
        constants=constants,
    )


def _finish(
    data: ERMData,
    loss: Loss,
    regularization: float,
    extra_l2: float,
    linear_term: Array | None,
    tol: float,
    sinfo: dict[str, Any],
) -> tuple[Array, bool]:
    """The certified finish (:func:`accelerated_finish`) after an uncertified Newton solve.

    Its step bound uses the drawn linear term (independent of the data; at most the public
    bound but with probability 2⁻⁴⁰). The steps taken go to the custodian's log only.
    """
    t_norm = 0.0 if linear_term is None else float(np.linalg.norm(linear_term))
    mu = float(regularization) + float(extra_l2)
    steps = finish_steps(loss.smoothness, mu, 1.0 + t_norm, tol)
    w_out, bound, taken = accelerated_finish(
        data,
        loss=loss,
        regularization=regularization,
        extra_l2=extra_l2,
        linear_term=None if linear_term is None else np.asarray(linear_term).reshape(-1),
        tol=tol,
        steps=steps,
    )
    _custodian.info(
        "ERM: Newton not certified after %d iterations; accelerated finish took %d of %d "
        "steps (certified gradient bound %r; private: not released)",
        int(sinfo["n_iter"]),
        taken,
        steps,
        bound,
    )
    ok = bool(math.isfinite(bound) and bound <= tol and np.all(np.isfinite(w_out)))
    return w_out, ok


# --------------------------------------------------------------------------- where the records are


class ERMData:
    """The records of one ERM fit, wherever they are: what the private solvers need of them.

    ``n`` (the public number of records) and ``dim`` (their width); :meth:`solve`, Newton's
    method to ``‖∇J‖ ≤ tol`` on ``J(w) = (1/n) Σ ℓ(y_i wᵀz_i) + (Λ + extra_l2)/2 ‖w‖² +
    linear_termᵀw``; :meth:`certify`, the bound of :func:`certified_gradient_bound` on the
    exact gradient norm at ``w``. :class:`InMemoryERMData` holds an array;
    :class:`PartitionedERMData` reduces partial sums over the partitions of a table.
    """

    n: int
    dim: int

    def solve(
        self,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        tol: float,
        max_iter: int,
    ) -> tuple[Array, dict[str, Any]]:
        """``(w, info)`` with ``info["n_iter"]`` and ``info["gradient_norm"]`` (float64)."""
        raise NotImplementedError

    def certify(
        self,
        w: Array,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        w_norm_bound: Any,
    ) -> float:
        """An upper bound on the exact ``‖∇J(w)‖₂``, float rounding included."""
        raise NotImplementedError

    def gradient(
        self,
        w: Array,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        w_norm_bound: Any,
    ) -> tuple[Array, float]:
        """The float64 ``∇J(w)`` (d,) and the bound :meth:`certify` gives at ``w``.

        The gradient is the one the certificate is taken on (records summed pairwise), so
        :func:`accelerated_finish` steps and certifies with one evaluation.
        """
        raise NotImplementedError


class InMemoryERMData(ERMData):
    """Records ``Z`` (n, d) and labels ``y`` (±1) in memory: :func:`solve_erm_batch` and
    :func:`certified_gradient_bound`, exactly as :func:`private_erm` always called them."""

    def __init__(
        self, Z: Array, y: Array, *, sample_weight: Array | None = None, n: int | None = None
    ) -> None:
        self.Z = Z
        self.y = y
        self.n, self.dim = (int(v) for v in Z.shape)
        # Under a privacy unit each person's rows share one term (weights 1/rows, summing
        # to the persons' number ``n``): the objective's n is the persons'.
        self.sample_weight = sample_weight
        if sample_weight is not None:
            assert n is not None
            self.n = int(n)

    def solve(
        self,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        tol: float,
        max_iter: int,
    ) -> tuple[Array, dict[str, Any]]:
        W, _, info = solve_erm_batch(
            self.Z,
            self.y,
            loss=loss,
            regularization=regularization,
            extra_linear_terms=linear_term,
            extra_l2=extra_l2,
            tol=tol,
            max_iter=max_iter,
            sample_weight=self.sample_weight,
        )
        return W[0], {"n_iter": int(info["n_iter"]), "gradient_norm": info["gradient_norm"][0]}

    def certify(
        self,
        w: Array,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        w_norm_bound: Any,
    ) -> float:
        bound = certified_gradient_bound(
            self.Z,
            self.y,
            np.atleast_2d(w),
            loss=loss,
            regularization=regularization,
            extra_l2=extra_l2,
            extra_linear_terms=linear_term,
            sample_weight=self.sample_weight,
            w_norm_bound=w_norm_bound,
        )
        return float(bound[0])

    def gradient(
        self,
        w: Array,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        w_norm_bound: Any,
    ) -> tuple[Array, float]:
        W = np.atleast_2d(np.asarray(w, dtype=np.float64))
        y = np.asarray(self.y, dtype=np.float64)
        Z = np.asarray(self.Z, dtype=np.float64)
        if self.sample_weight is None:
            p = np.full(Z.shape[0], 1.0 / Z.shape[0])
        else:
            sw = np.asarray(self.sample_weight, dtype=np.float64)
            p = sw / sw.sum()
        data = _certified_data_term(Z, y, W, loss, p)
        G, bound = _gradient_of(
            data,
            W,
            linear_term,
            n=self.n,
            loss=loss,
            regularization=regularization,
            extra_l2=extra_l2,
            w_norm_bound=w_norm_bound,
        )
        return G[0], float(bound[0])


@dataclass(frozen=True)
class ERMPartial:
    """Partial sums of one or more partitions at candidate weights ``W`` (m, d).

    Attributes
    ----------
    values : ndarray, shape (k, m)
        ``Σ ℓ(y_i w_jᵀz_i)`` over one partition per row (added with ``math.fsum``).
    gradient : ndarray, shape (c, d)
        Chunk sums of ``Σ_i (1/n) ℓ'(y_i w_0ᵀz_i) y_i z_i`` at the first candidate, each
        chunk summed pairwise (:func:`_pairwise_chunk_sums`); their ``math.fsum`` is the data
        term :func:`certified_gradient_bound` certifies.
    hessian : ndarray, shape (d, d), or None
        ``Σ_i (1/n) ℓ''(y_i w_0ᵀz_i) z_i z_iᵀ`` at the first candidate.
    n_rows : int
    """

    values: Array
    gradient: Array
    hessian: Array | None
    n_rows: int

    def __add__(self, other: ERMPartial) -> ERMPartial:
        hessian = None
        if self.hessian is not None and other.hessian is not None:
            hessian = self.hessian + other.hessian
        return ERMPartial(
            values=np.concatenate([self.values, other.values]),
            gradient=np.concatenate([self.gradient, other.gradient]),
            hessian=hessian,
            n_rows=self.n_rows + other.n_rows,
        )


def erm_partition_terms(
    Z: Array, y: Array, W: Array, *, loss: Loss, n: int, curvature: bool = True
) -> ERMPartial:
    """One partition's share of the objective at each row of ``W``, and of the gradient and
    Hessian at ``W[0]`` (``n`` is the whole table's public row count).

    The gradient is computed as :func:`certified_gradient_bound` computes it (margins by
    dot products, weights ``y_i·(1/n)``, records summed pairwise per chunk), so the sum of
    the partitions' chunks is certified by the same :func:`rounding_allowance`. The work is
    done on ``Zᵀ`` (d, rows), contiguous: free when ``Z`` is Fortran-ordered, one copy
    otherwise.
    """
    ZT = np.ascontiguousarray(np.asarray(Z, dtype=np.float64).T)  # (d, rows)
    y = np.asarray(y, dtype=np.float64)
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    rows = ZT.shape[1]
    M = (W @ ZT) * y  # (m, rows) margins, each row contiguous
    values = loss.value(M).sum(axis=1)  # pairwise along each contiguous row
    margins = M[0]
    a = loss.derivative(margins) * (y * (1.0 / n))
    gradient = _pairwise_chunk_sums_rows(ZT * a)  # the gradient's terms, (d, rows)
    hessian = None
    if curvature:
        S = loss.second_derivative(margins) / n
        hessian = (ZT * S) @ ZT.T
    return ERMPartial(
        values=np.asarray(values, dtype=np.float64).reshape(1, W.shape[0]),
        gradient=gradient,
        hessian=hessian,
        n_rows=rows,
    )


def _pairwise_chunk_sums_rows(termsT: Array) -> Array:
    """:func:`_pairwise_chunk_sums` of ``termsT.T`` for a C-contiguous ``termsT`` (d, n)."""
    d, n = termsT.shape
    parts = [termsT[:, i : i + _CHUNK_ROWS].sum(axis=1) for i in range(0, n, _CHUNK_ROWS)]
    if not parts:
        return np.zeros((0, d))
    return np.asarray(np.array(parts), dtype=np.float64)


#: Step lengths tried in one pass over the partitions: 1, 1/2, ..., 1/128.
_STEPS_PER_PASS = 8
#: Halvings of the step before a line search gives up (as :func:`solve_erm_batch`).
_MAX_HALVINGS = 60
#: The warm start's solve on the sample: its gradient tolerance and iteration cap.
_WARM_START_TOL = 1e-8
_WARM_START_ITER = 50


class PartitionedERMData(ERMData):
    """Records spread over partitions: each pass reduces :class:`ERMPartial` sums.

    Parameters
    ----------
    evaluate : callable ``(W, loss, curvature) -> ERMPartial``
        One pass over every partition at the candidates ``W`` (m, d)
        (:func:`erm_partition_terms` per partition), the partials added.
    n, dim : int
        The public row count and the records' width.
    sample : callable ``() -> (Z, y)``, optional
        A few rows in memory (one block of the first partition): :meth:`solve` starts
        Newton from the same objective's minimiser on them instead of from zero.

    Notes
    -----
    :meth:`solve` is the damped Newton method of :func:`solve_erm_batch` for one problem:
    the same direction ``H⁻¹∇J``, the same Armijo test (and the same acceptance of a full
    step that J can no longer resolve), the same stopping rule ``‖∇J‖ ≤ tol``. Each pass
    evaluates eight step lengths at once together with the gradient and Hessian at the full
    step, so an iteration whose full step is accepted costs one pass. The gradient is the
    certified form (pairwise, then ``math.fsum``): :meth:`certify` at the returned ``w``
    reuses the data term of the pass that evaluated it (the same computation as a new
    pass), otherwise it runs one more pass.
    """

    def __init__(self, evaluate: Any, n: int, dim: int, *, sample: Any = None) -> None:
        self._evaluate = evaluate
        self._sample = sample
        self.n = int(n)
        self.dim = int(dim)
        self.n_passes = 0
        self._last: tuple[bytes, Array] | None = None

    def _warm_start(
        self, loss: Loss, regularization: float, extra_l2: float, t: Array, tol: float
    ) -> Array:
        """The minimiser of the same objective on the sample (zero without one).

        Only a starting point: Newton then runs on the whole table to the stopping rule,
        and the certificate is taken on the whole table, so the release does not depend on
        it beyond the certified tolerance. From a start this close Newton converges
        quadratically in a few passes instead of starting from zero.
        """
        start = np.zeros(self.dim)
        if self._sample is None:
            return start
        drawn = self._sample()
        if drawn is None or drawn[0].shape[0] == 0:
            return start
        Zs, ys = drawn
        W, _, _ = solve_erm_batch(
            Zs,
            ys,
            loss=loss,
            regularization=regularization,
            extra_linear_terms=t[None, :],
            extra_l2=extra_l2,
            tol=max(tol, _WARM_START_TOL),
            max_iter=_WARM_START_ITER,
        )
        return W[0] if np.all(np.isfinite(W[0])) else start

    def _pass(self, W: Array, loss: Loss, curvature: bool) -> tuple[Array, Array, Array | None]:
        """Data objective of each candidate, data gradient (and Hessian) at the first."""
        part: ERMPartial = self._evaluate(W, loss, curvature)
        self.n_passes += 1
        if part.n_rows != self.n:
            raise DataValidationError(
                f"X: a pass over the partitions read {part.n_rows} rows where the scan counted "
                f"{self.n}; the table changed during the fit, so nothing was released (the "
                "spend stands)"
            )
        values = _fsum_columns(part.values) / self.n
        grad = _fsum_columns(part.gradient) if part.gradient.shape[0] else np.zeros(self.dim)
        self._last = (np.ascontiguousarray(W[0]).tobytes(), grad)
        return values, grad, part.hessian

    def solve(
        self,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        tol: float,
        max_iter: int,
    ) -> tuple[Array, dict[str, Any]]:
        d = self.dim
        lam = float(regularization) + float(extra_l2)
        t = np.zeros(d) if linear_term is None else np.asarray(linear_term, dtype=np.float64)
        t = t.reshape(d)
        eye = np.eye(d)

        def total(W: Array, data_values: Array) -> Array:
            return data_values + 0.5 * lam * np.einsum("ij,ij->i", W, W) + W @ t

        w = self._warm_start(loss, float(regularization), float(extra_l2), t, tol)
        vals, grad, hess = self._pass(w[None], loss, True)
        J = float(total(w[None], vals)[0])
        G = grad + lam * w + t
        gnorm = float(np.sqrt(G @ G))
        n_iter = 0
        for n_iter in range(1, max_iter + 1):
            if not gnorm > tol:
                n_iter -= 1
                break
            assert hess is not None
            P = np.linalg.solve(hess + lam * eye, G)
            slope = float(G @ P)
            accepted = None
            for first in range(0, _MAX_HALVINGS, _STEPS_PER_PASS):
                steps = 0.5 ** np.arange(first, min(first + _STEPS_PER_PASS, _MAX_HALVINGS))
                cand = w[None, :] - steps[:, None] * P[None, :]
                vals, grad, hess = self._pass(cand, loss, True)
                cJ = total(cand, vals)
                armijo = cJ <= J - 1e-4 * steps * slope
                rounding = (steps == 1.0) & (cJ <= J + 1e-13 * max(1.0, abs(J)))
                ok = np.flatnonzero(armijo | rounding)
                if ok.size:
                    accepted = int(ok[0])
                    w, J = cand[accepted], float(cJ[accepted])
                    if accepted:  # gradient and Hessian were taken at the full step
                        _, grad, hess = self._pass(w[None], loss, True)
                    break
            if accepted is None:  # no step decreases J: stuck, as the in-memory solver
                break
            G = grad + lam * w + t
            gnorm = float(np.sqrt(G @ G))
        return w, {"n_iter": n_iter, "gradient_norm": gnorm, "objective": J}

    def certify(
        self,
        w: Array,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        w_norm_bound: Any,
    ) -> float:
        W = np.atleast_2d(np.asarray(w, dtype=np.float64))
        key = np.ascontiguousarray(W[0]).tobytes()
        if self._last is not None and self._last[0] == key:
            data = self._last[1]
        else:
            _, data, _ = self._pass(W, loss, False)
        _, bound = _gradient_of(
            data[None, :],
            W,
            linear_term,
            n=self.n,
            loss=loss,
            regularization=regularization,
            extra_l2=extra_l2,
            w_norm_bound=w_norm_bound,
        )
        return float(bound[0])

    def gradient(
        self,
        w: Array,
        *,
        loss: Loss,
        regularization: float,
        extra_l2: float,
        linear_term: Array | None,
        w_norm_bound: Any,
    ) -> tuple[Array, float]:
        W = np.atleast_2d(np.asarray(w, dtype=np.float64))
        _, data, _ = self._pass(W, loss, False)
        G, bound = _gradient_of(
            data[None, :],
            W,
            linear_term,
            n=self.n,
            loss=loss,
            regularization=regularization,
            extra_l2=extra_l2,
            w_norm_bound=w_norm_bound,
        )
        return G[0], float(bound[0])


#: ``regularization="auto"`` keeps Λ at least where float64 can certify ``30·tol``
#: (:func:`float_regularization_floor`), so the residual step's noise stays small at large ε.
AUTO_TOL_FACTOR = 30.0


def float_regularization_floor(
    n: int, dim: int, smoothness: float, noise_norm: float, *, tol: float = DEFAULT_TOL
) -> float:
    """The least strong convexity μ at which :func:`certifiable_tol` stays ≤ 30·``tol``.

    The rounding allowance of the certificate grows like ``1/μ`` (through the public bound
    ``‖w‖ ≤ (1 + ‖b‖/n + τ)/μ``), and the residual step's noise scale like ``τ/μ``, so a tiny
    Λ makes that noise explode (at ε = 10 on Adult, ``"auto"`` without this floor gave Λ ≈
    7.6e-7 and a residual noise scale of 0.28 per coordinate). Public: ``n``, ``dim``, c,
    ``noise_norm`` (the public bound on ``‖b‖``) and ``tol`` only. 0 when ``tol`` is too small
    for any μ to reach it.
    """
    u = _U
    t = float(noise_norm) / int(n)
    c = float(smoothness)
    gamma_d = (int(dim) + 2) * u
    gamma_sum = (n + 2) * u if n <= 128 else (130 + math.ceil(math.log2(n))) * u
    slope = c * (gamma_d + 2 * u) * (1.0 + t + tol)  # the 1/μ term of the allowance
    rest = (
        c * (gamma_d + 2 * u) * 2.0
        + 7.0 * u
        + (gamma_sum + 3.0 * u) * (1.0 + 2.0 * u)
        + 3.0 * u * (2.0 + t + tol + 1.0)
    )
    room = AUTO_TOL_FACTOR * float(tol) - 8.0 * rest
    if room <= 0.0:
        return 0.0
    return 8.0 * slope / room


def auto_regularization(
    epsilon: float,
    n: int,
    smoothness: float,
    *,
    residual_share: float | None = None,
    dim: int | None = None,
    tol: float = DEFAULT_TOL,
) -> float:
    """``Λ = c/(n(e^{ε_obj/4} − 1))``: the smallest Λ for which Algorithm 2 takes no fallback.

    ``ε_obj = ε(1 − residual_share)`` is the objective part's ε (``residual_share=None``:
    the whole ε, for Algorithm 2 alone). At this Λ the Jacobian term
    ``2 log(1 + c/(nΛ))`` is exactly ``ε_obj/2``, so ``ε' = ε_obj/2`` (the fallback branch
    would reach the same effective ridge ``Λ + Δ`` and the same ``ε'``; any smaller Λ
    therefore changes nothing). With ``dim`` (the released vector's length) Λ is raised, where
    needed, to :func:`float_regularization_floor`: at large ε the formula's Λ is so small that
    float64 could not certify the solve without a large residual noise. It depends only on
    ε, the public ``n``, ``dim`` and the loss, never on the data.

    Examples
    --------
    >>> lam = auto_regularization(1.0, 1000, 0.25)
    >>> k = objective_perturbation_constants(1.0, 1000, lam, 0.25)
    >>> round(k.epsilon_prime, 12)
    0.5
    >>> lam = auto_regularization(1.0, 1000, 0.25, residual_share=0.01)
    >>> k = objective_perturbation_constants(1.0, 1000, lam, 0.25, dim=2, tol=1e-10)
    >>> round(k.epsilon_prime, 12), k.fallback
    (0.495, False)
    """
    eps = float(epsilon)
    if residual_share is not None:
        eps -= eps * float(residual_share)
    lam = float(smoothness) / (int(n) * math.expm1(min(eps / 4.0, 500.0)))
    if dim is not None:
        noise = noise_norm_bound(int(dim), 2.0 / (eps / 2.0))  # ε' = ε_obj/2 at this Λ
        lam = max(lam, float_regularization_floor(n, dim, smoothness, noise, tol=tol))
    return lam


def regularization_from_svm_c(c: float, n: int, *, form: str = "libsvm") -> float:
    """Λ of the CMS objective ``(1/n)Σℓ + Λ/2‖w‖²`` for an SVM-style ``C``.

    * ``form="libsvm"`` (LIBSVM / scikit-learn ``C``: ``½‖w‖² + C Σℓ``): ``Λ = 1/(nC)``;
    * ``form="rubinstein"`` (Rubinstein et al.'s ``½‖w‖² + (C/n) Σℓ``): ``Λ = 1/C``.

    The output-perturbation sensitivity ``2L/(nΛ)`` is then ``2LC`` (LIBSVM form) or
    ``2LC/n`` (Rubinstein form). Plugging a LIBSVM ``C`` into a noise formula derived for
    the ``C/n`` form under-noises by a factor ``n`` (the erratum of
    ``ALGORITHMS-publishing.md`` C.5.1).

    Examples
    --------
    >>> regularization_from_svm_c(2.0, 100)
    0.005
    >>> regularization_from_svm_c(2.0, 100, form="rubinstein")
    0.5
    """
    cv = check_positive("C", c)
    n = check_int("n", n, minimum=1)
    if form == "libsvm":
        return 1.0 / (n * cv)
    if form == "rubinstein":
        return 1.0 / cv
    raise ParameterError(f"form ({form!r}) must be 'libsvm' or 'rubinstein'")
