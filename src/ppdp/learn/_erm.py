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

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from ppdp._validation import check_int, check_nonnegative, check_positive
from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "DEFAULT_MAX_ITER",
    "DEFAULT_TOL",
    "ERMResult",
    "HuberLoss",
    "LogisticLoss",
    "Loss",
    "ObjectiveConstants",
    "OutputConstants",
    "auto_regularization",
    "loss_from_dict",
    "objective_perturbation_constants",
    "objective_perturbation_solutions",
    "output_perturbation_constants",
    "output_perturbation_release",
    "private_erm",
    "regularization_from_svm_c",
    "solve_erm",
    "solve_erm_batch",
]

#: Default bound on the gradient norm of the returned solution.
DEFAULT_TOL = 1e-10
#: Default number of Newton iterations (each with a backtracking line search).
DEFAULT_MAX_ITER = 500

Array = NDArray[np.float64]


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


# --------------------------------------------------------------------------- the two mechanisms


@dataclass(frozen=True)
class ObjectiveConstants:
    """Constants of objective perturbation ([CMS11]_ Algorithm 2) for one fit.

    Attributes
    ----------
    epsilon : float
        ε_p, the whole guarantee.
    epsilon_prime : float
        ε'_p: ``ε − 2 log(1 + cR²/(nΛ))`` when positive, else ``ε/2`` (fallback).
    ridge : float
        Δ: ``0`` when ε' > 0 from the first formula, else ``cR²/(n(e^{ε/4} − 1)) − Λ``.
    noise_scale : float
        ``2R/ε'``: the noise ``b`` has density ∝ ``exp(−‖b‖/noise_scale)``, so
        ``‖b‖ ~ Gamma(d, noise_scale)``.
    fallback : bool
        True when the Δ branch was taken.
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon_prime": self.epsilon_prime,
            "ridge_delta": self.ridge,
            "noise_norm_scale": self.noise_scale,
            "fallback": self.fallback,
            "smoothness_c": self.smoothness,
            "radius": self.radius,
        }


def objective_perturbation_constants(
    epsilon: float, n: int, regularization: float, smoothness: float, *, radius: float = 1.0
) -> ObjectiveConstants:
    """ε', Δ and the noise scale of [CMS11]_ Algorithm 2 (JMLR version, errata in A.9).

    For records of norm ≤ R and ``0 ≤ ℓ'' ≤ c`` the Jacobian ratio is at most
    ``(1 + cR²/(n(Λ+Δ)))²`` and the noise difference ``‖b − b'‖ ≤ 2R``.

    Examples
    --------
    >>> k = objective_perturbation_constants(1.0, 1000, 0.01, 0.25)
    >>> k.fallback, k.ridge, round(k.epsilon_prime, 6)
    (False, 0.0, 0.950615)
    >>> k = objective_perturbation_constants(0.1, 100, 0.001, 0.25)
    >>> k.fallback, k.epsilon_prime
    (True, 0.05)
    """
    eps = float(epsilon)
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
    return ObjectiveConstants(
        epsilon=eps,
        n=int(n),
        regularization=lam,
        smoothness=float(smoothness),
        radius=float(radius),
        epsilon_prime=eps_prime,
        ridge=ridge,
        noise_scale=2.0 * float(radius) / eps_prime,
        fallback=fallback,
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
    """One private fit: the released weights and how they were made."""

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


def output_perturbation_release(w_star: Array, constants: OutputConstants, noise: Array) -> Array:
    """Step 3 of Algorithm 1: ``snap(w*, Λ_g) + b`` for each noise vector (rows, (m, d))."""
    from ppdp import noise as _noise

    return np.asarray(
        _noise.snap(w_star, constants.granularity, name="coef") + np.atleast_2d(noise),
        dtype=np.float64,
    )


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
    noise_multiplier: float = 1.0,
) -> ERMResult:
    """ε-DP linear ERM on records ``Z`` of norm ≤ 1 and labels ±1 (replace-one, n public).

    ``perturbation="objective"`` is [CMS11]_ Algorithm 2, ``"output"`` Algorithm 1. The
    caller validates the parameters and spends the budget first. ``noise_multiplier`` is
    the audits' hook (≠ 1 voids the guarantee). A solver that stops above ``tol`` warns
    :class:`~ppdp.exceptions.ConvergenceWarning`.
    """
    import warnings

    from ppdp import noise
    from ppdp.exceptions import ConvergenceWarning

    n, d = Z.shape
    if perturbation == "objective":
        k_obj = objective_perturbation_constants(epsilon, n, regularization, loss.smoothness)
        b = noise.gamma_norm_vector(d, k_obj.noise_scale, size=1, random_state=random_state)
        W, conv, binfo = objective_perturbation_solutions(
            Z, y, loss=loss, constants=k_obj, noise=noise_multiplier * b, tol=tol, max_iter=max_iter
        )
        w, ok = W[0], bool(conv[0])
        info = {"n_iter": int(binfo["n_iter"]), "gradient_norm": float(binfo["gradient_norm"][0])}
        constants: ObjectiveConstants | OutputConstants = k_obj
    elif perturbation == "output":
        k_out = output_perturbation_constants(
            epsilon, n, regularization, d, lipschitz=loss.lipschitz, tol=tol
        )
        w_star, ok, info = solve_erm(
            Z, y, loss=loss, regularization=regularization, tol=tol, max_iter=max_iter
        )
        b = noise.gamma_norm_vector(
            d, k_out.noise_scale, size=1, random_state=random_state, granularity=k_out.granularity
        )
        w = output_perturbation_release(w_star, k_out, noise_multiplier * b)[0]
        constants = k_out
    else:  # pragma: no cover - validated by the estimators
        raise ParameterError(f"perturbation ({perturbation!r}) must be 'objective' or 'output'")
    if not ok:
        warnings.warn(
            f"the ERM solver stopped after {info['n_iter']} iterations with gradient norm "
            f"{info['gradient_norm']:.3g} > tol {tol:g}; the privacy proof assumes the exact "
            "minimiser: raise max_iter",
            ConvergenceWarning,
            stacklevel=3,
        )
    return ERMResult(
        coef=np.asarray(w, dtype=np.float64),
        converged=ok,
        gradient_norm=info["gradient_norm"],
        n_iter=info["n_iter"],
        constants=constants,
    )


def auto_regularization(epsilon: float, n: int, smoothness: float) -> float:
    """``Λ = c/(n(e^{ε/4} − 1))``: the smallest Λ for which Algorithm 2 takes no fallback.

    At this Λ the Jacobian term ``2 log(1 + c/(nΛ))`` is exactly ``ε/2``, so ``ε' = ε/2``
    (the fallback branch would reach the same effective ridge ``Λ + Δ`` and the same
    ``ε'``; any smaller Λ therefore changes nothing). It depends only on ε, the public
    ``n`` and the loss, never on the data.

    Examples
    --------
    >>> lam = auto_regularization(1.0, 1000, 0.25)
    >>> k = objective_perturbation_constants(1.0, 1000, lam, 0.25)
    >>> round(k.epsilon_prime, 12)
    0.5
    """
    return float(smoothness) / (int(n) * math.expm1(float(epsilon) / 4.0))


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
