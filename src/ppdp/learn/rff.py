"""Random Fourier features for the Gaussian (RBF) kernel, with a map of norm exactly 1.

The map is Li et al.'s eq. (7) (Rahimi & Recht's cos/sin form)::

    z(x) = D^{-1/2} [cos ρ_1ᵀx, sin ρ_1ᵀx, ..., cos ρ_Dᵀx, sin ρ_Dᵀx] ∈ R^{2D},

so ``z(x)ᵀz(y) = (1/D) Σ_j cos(ρ_jᵀ(x - y))`` and ``‖z(x)‖ = 1`` for every ``x`` and every
``ρ``. With ``ρ_j ~ N(0, 2γ I)`` the inner product is an unbiased estimate of
``k(x, y) = exp(-γ‖x - y‖²)`` (scikit-learn's ``gamma``). The frequencies ``ρ`` are
*public parameters of a release*: they are drawn independently of the data (or fitted on
public data, :func:`fit_frequencies`), cost no privacy budget, and are published with the
model that uses them.

The map's norm is what the private SVM's sensitivity rests on (``docs/proofs/rbf-svm.md``):
every row is divided by its computed norm, so ``‖z(x)‖ = 1`` up to one rounding (≤ 1e-15),
whatever ``ρ`` and ``x`` are (no input bound is needed).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ppdp._validation import check_int, check_positive
from ppdp.exceptions import DataValidationError, ParameterError

__all__ = [
    "RandomFourierFeatures",
    "RhoFit",
    "draw_frequencies",
    "feature_map",
    "fit_frequencies",
    "rbf_kernel",
]

logger = logging.getLogger(__name__)


def draw_frequencies(
    n_components: int, n_features: int, gamma: float, random_state: Any = None
) -> NDArray[np.float64]:
    """``n_components`` frequencies ``ρ_j ~ N(0, 2γ I_d)``, the Fourier transform of the RBF kernel.

    The frequencies are public (they do not depend on the data and are released with the
    model), so they come from numpy's generator: ``random_state=None`` seeds it from the
    operating system, an int makes the draw reproducible. This is not privacy noise.

    Returns
    -------
    ndarray of shape (n_components, n_features)
    """
    rng = np.random.default_rng(random_state)
    return rng.normal(0.0, np.sqrt(2.0 * gamma), size=(n_components, n_features))


def feature_map(X: NDArray[np.float64], rho: NDArray[np.float64]) -> NDArray[np.float64]:
    """The map z(x) of eq. (7), each row divided by its computed norm (so ‖z(x)‖ = 1).

    Columns are ordered ``[cos ρ_1ᵀx, sin ρ_1ᵀx, cos ρ_2ᵀx, ...]`` / √D.
    """
    proj = X @ rho.T
    n, d = proj.shape
    out = np.empty((n, 2 * d), dtype=np.float64)
    out[:, 0::2] = np.cos(proj)
    out[:, 1::2] = np.sin(proj)
    # cos² + sin² = 1 up to rounding; dividing by the computed norm makes it exact to
    # one rounding, so the sensitivity argument's ‖z‖ ≤ 1 holds to 1e-15.
    out /= np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
    return out


def rbf_kernel(X: NDArray[np.float64], Y: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """``exp(-γ‖x - y‖²)`` for every pair of rows.

    Built in place in the output (one ``len(X) × len(Y)`` array, plus a block of at most
    256 rows), with the same operations, in the same order, as
    ``exp(-γ·max(‖x‖² + ‖y‖² - 2xᵀy, 0))``.
    """
    xx = np.einsum("ij,ij->i", X, X)
    yy = np.einsum("ij,ij->i", Y, Y)
    out = X @ Y.T
    out *= -2.0
    for start in range(0, out.shape[0], _ROW_BLOCK):
        stop = start + _ROW_BLOCK
        out[start:stop] += xx[start:stop, None] + yy[None, :]
    np.maximum(out, 0.0, out=out)
    out *= -gamma
    np.exp(out, out=out)
    return out


_ROW_BLOCK = 256


def _check_matrix(X: ArrayLike, name: str = "X") -> NDArray[np.float64]:
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise DataValidationError(
            f"{name} must be a 2-d array (rows × features), got ndim {arr.ndim}"
        )
    if not np.isfinite(arr).all():
        raise DataValidationError(f"{name} contains NaN or infinite entries; remove or impute them")
    return arr


# --------------------------------------------------------------------------- ρ fitting


@dataclass(frozen=True)
class RhoFit:
    """The result of :func:`fit_frequencies`.

    Attributes
    ----------
    rho : ndarray of shape (n_components, n_features)
        The fitted frequencies (public: they are fitted on public data only).
    initial_loss, loss : float
        Mean squared kernel error over all public pairs, at the start and at the end.
    n_iter : int
        L-BFGS iterations.
    n_evaluations : int
        Objective (and gradient) evaluations.
    converged : bool
        Whether L-BFGS met its tolerance (the fit is a heuristic: privacy does not depend on it).
    seconds : float
        Wall-clock time of the fit.
    """

    rho: NDArray[np.float64]
    initial_loss: float
    loss: float
    n_iter: int
    n_evaluations: int
    converged: bool
    seconds: float


def kernel_fit_loss(
    rho_flat: NDArray[np.float64],
    X: NDArray[np.float64],
    K: NDArray[np.float64],
    n_components: int,
    *,
    with_gradient: bool = True,
    k_sq: float | None = None,
) -> tuple[float, NDArray[np.float64]] | float:
    """Mean over all public pairs (a, b) of ``(z(x_a)ᵀz(x_b) - k(x_a, x_b))²`` and its gradient.

    With ``C = cos(Xρᵀ)``, ``S = sin(Xρᵀ)`` and ``W = [C S]`` (n × 2D), the approximate
    kernel is ``M = WWᵀ/D = (CCᵀ + SSᵀ)/D``, i.e. ``M_ab = (1/D) Σ_j cos(ρ_jᵀ(x_a - x_b))``
    (the kernel of the map training uses, Li et al. eq. 7; pitfall C.5.6). With
    ``R = M - K`` (symmetric) and ``f = ‖R‖_F²/n²``::

        ∂f/∂ρ_j = -(2/(n² D)) Σ_ab R_ab sin(ρ_jᵀ(x_a - x_b)) (x_a - x_b)
                = (4/(n² D)) [ (C ∘ (RS) - S ∘ (RC))ᵀ X ]_j,

    so everything follows from ``‖R‖_F²`` and ``RW = [RC RS]``. From ``max(5D, 1000)`` public
    rows on, these come from the 2D × 2D Gram matrix ``G = WᵀW``, never forming R or M::

        ‖R‖_F² = ‖G‖_F²/D² - (2/D) Σ W ∘ (KW) + ‖K‖_F²,     RW = WG/D - KW,

    one product ``K @ W`` (O(n² D)) plus O(n D² + n d D), and no n × n array besides
    ``K``. This loss is a difference of terms of size ``‖K‖_F²``: near a good fit it keeps
    about 12 significant digits (against the pairwise form on Adult rows,
    ``benchmarks/hybrid_rho_fit.md``). Below ``5D`` rows, or below 1,000 (where the Gram
    route gains at most 5 % but rounds differently from earlier releases), the residual R is
    formed and ``RC``, ``RS`` are two products: O(n² D) either way.

    Parameters
    ----------
    rho_flat : ndarray of shape (n_components · d,)
        The frequencies, row-major.
    X : ndarray of shape (n, d)
        Public rows.
    K : ndarray of shape (n, n)
        The target kernel on ``X`` (symmetric).
    n_components : int
        D.
    with_gradient : bool, default True
        Return ``(loss, gradient)``; False returns the loss alone.
    k_sq : float, optional
        ``‖K‖_F²``, when the caller has it (a fit computes it once); computed when needed
        otherwise.
    """
    n, d = X.shape
    D = n_components
    rho = rho_flat.reshape(D, d)
    proj = X @ rho.T
    scale = 1.0 / D
    norm = 1.0 / (n * n)
    if n < _GRAM_MIN_ROWS or n < _GRAM_ROWS_PER_COMPONENT * D:
        # The residual route, in the arithmetic of every release so far: a seeded fit on
        # fewer rows gives the same frequencies, bit for bit, as before the Gram route.
        c = np.cos(proj)
        s = np.sin(proj)
        resid = (c @ c.T + s @ s.T) * scale - K
        loss = float(np.einsum("ij,ij->", resid, resid)) * norm
        if not with_gradient:
            return loss
        dproj = (c * (resid @ s) - s * (resid @ c)) * (4.0 * scale * norm)
        return loss, (dproj.T @ X).reshape(-1)
    W = np.empty((n, 2 * D), dtype=np.float64)
    np.cos(proj, out=W[:, :D])
    np.sin(proj, out=W[:, D:])
    if k_sq is None:
        k_sq = float(np.vdot(K, K))
    KW = K @ W  # the one O(n² D) product
    G = W.T @ W
    r_sq = float(np.vdot(G, G)) * (scale * scale) - 2.0 * scale * float(np.vdot(W, KW)) + k_sq
    loss = max(r_sq, 0.0) * norm  # ‖R‖² ≥ 0; only rounding can take the difference below
    if not with_gradient:
        return loss
    RW = W @ G
    RW *= scale
    RW -= KW
    dproj = W[:, :D] * RW[:, D:]
    dproj -= W[:, D:] * RW[:, :D]
    dproj *= 4.0 * scale * norm
    return loss, (dproj.T @ X).reshape(-1)


# From n = 5D public rows the Gram route (O(n²D) + 6nD² flops) beats the n × n residual
# (3n²D); measured crossover 5D-6D at D = 25, 100, 200 (benchmarks/hybrid_rho_fit.md).
_GRAM_ROWS_PER_COMPONENT = 5
# Below 1,000 rows the Gram route gains at most 5 % (same table) but rounds differently,
# and L-BFGS's unconverged path carries that to the third decimal of an AUC: the
# published li2014 results (≤ 500 public rows) keep the residual route's arithmetic.
_GRAM_MIN_ROWS = 1000


def fit_frequencies(
    public_X: ArrayLike,
    *,
    n_components: int,
    gamma: float,
    rho0: NDArray[np.float64] | None = None,
    random_state: Any = None,
    max_iter: int = 500,
    tol: float = 1e-9,
    gradient: str = "analytic",
) -> RhoFit:
    """Fit frequencies ρ to the RBF kernel on a public sample (Li et al. 2014, eq. 6).

    Minimises the mean squared error between the kernel of the cos/sin map (7),
    ``(1/D) Σ_j cos(ρ_jᵀ(x_a - x_b))``, and ``exp(-γ‖x_a - x_b‖²)`` over all pairs of
    public rows, by L-BFGS (scipy) from ``rho0`` or an RFF draw. The objective is
    non-convex; the fit is a heuristic and privacy does not depend on it: *any* ρ keeps
    ``‖z(x)‖ = 1``. What privacy does need is that the rows are public, i.e. disjoint from
    the private training data (``HybridRBFSVM`` checks and warns).

    Parameters
    ----------
    public_X : array_like of shape (n_public, d)
        Public rows, encoded as the private data will be.
    n_components : int
        D, the number of frequencies (the map has 2D coordinates).
    gamma : float
        γ > 0 of the target kernel.
    rho0 : ndarray of shape (D, d), optional
        Starting point; default an RFF draw ``N(0, 2γ I)`` from ``random_state``.
    random_state : None, int or numpy Generator, optional
        For the starting draw only.
    max_iter : int, default 500
        L-BFGS iteration cap.
    tol : float, default 1e-9
        L-BFGS ``ftol`` and gradient tolerance (relative to the loss scale).
    gradient : {"analytic", "finite-difference"}, default "analytic"
        The analytic gradient, or scipy's two-point finite differences (the slow baseline
        of ``benchmarks/bench_hybrid_rho_fit.py``).

    Returns
    -------
    RhoFit

    References
    ----------
    .. [LXOJ14] H. Li, L. Xiong, L. Ohno-Machado, X. Jiang, "Privacy preserving RBF
       kernel support vector machine", BioMed Research International, 2014.
    .. [LN89] D. C. Liu, J. Nocedal, "On the limited memory BFGS method for large scale
       optimization", Mathematical Programming 45, 1989.
    """
    X = _check_matrix(public_X, "public_X")
    D = check_int("n_components", n_components, minimum=1)
    g = check_positive("gamma", gamma)
    iters = check_int("max_iter", max_iter, minimum=1)
    if X.shape[0] < 2:
        raise DataValidationError(
            f"public_X has {X.shape[0]} row(s); fitting the kernel needs at least 2 public rows"
        )
    if gradient not in ("analytic", "finite-difference"):
        raise ParameterError(
            f"gradient ({gradient!r}) must be one of 'analytic', 'finite-difference'"
        )
    if rho0 is None:
        rho0 = draw_frequencies(D, X.shape[1], g, random_state)
    rho0 = np.asarray(rho0, dtype=np.float64)
    if rho0.shape != (D, X.shape[1]):
        raise ParameterError(
            f"rho0 has shape {rho0.shape}; it must be (n_components, n_features) = "
            f"({D}, {X.shape[1]})"
        )
    with _one_blas_thread():
        return _fit(X, D, g, rho0, iters, tol, gradient)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """The fit runs on one BLAS thread, whatever the number of public rows.

    Threads would change the result: they change the order of the sums in ``K @ W`` and
    the dot products, so the loss and gradient differ in their last bits with the thread
    count (measured at 2,000 rows), and L-BFGS over hundreds of iterations turns that into
    a different ρ (AUC differences of order 1e-3 in ``ppdp reproduce li2014-*``). One
    thread keeps a seeded fit independent of the number of cores. Speed: on 2 cores a second thread
    made one evaluation 1.5-1.8 times faster from 500 rows when the other core was idle,
    and 1.2-20 times slower when it was busy (``benchmarks/hybrid_rho_fit.md``).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _fit(
    X: NDArray[np.float64],
    D: int,
    g: float,
    rho0: NDArray[np.float64],
    iters: int,
    tol: float,
    gradient: str,
) -> RhoFit:
    K = rbf_kernel(X, X, g)
    k_sq = float(np.vdot(K, K))  # once per fit
    start = time.perf_counter()
    initial = kernel_fit_loss(rho0.reshape(-1), X, K, D, with_gradient=False, k_sq=k_sq)
    assert isinstance(initial, float)
    if gradient == "analytic":

        def loss_grad(v: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            out = kernel_fit_loss(v, X, K, D, k_sq=k_sq)
            assert isinstance(out, tuple)
            return out

        res = minimize(
            loss_grad,
            rho0.reshape(-1),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": iters, "ftol": tol, "gtol": tol * 1e-3},
        )
    else:

        def loss_only(v: NDArray[np.float64]) -> float:
            out = kernel_fit_loss(v, X, K, D, with_gradient=False, k_sq=k_sq)
            assert isinstance(out, float)
            return out

        res = minimize(
            loss_only,
            rho0.reshape(-1),
            method="L-BFGS-B",
            options={"maxiter": iters, "ftol": tol, "gtol": tol * 1e-3},
        )
    seconds = time.perf_counter() - start
    rho = np.asarray(res.x, dtype=np.float64).reshape(D, X.shape[1])
    final = float(res.fun)
    if not np.isfinite(rho).all() or not final <= initial:
        # Never worse than the start: fall back to it (the fit is a heuristic).
        rho, final = rho0.copy(), initial
    converged = bool(res.success)
    if not converged:
        logger.info("rho fit stopped before its tolerance: %s", res.message)
    return RhoFit(
        rho=rho,
        initial_loss=initial,
        loss=final,
        n_iter=int(res.nit),
        n_evaluations=int(res.nfev),
        converged=converged,
        seconds=seconds,
    )


# --------------------------------------------------------------------------- transformer


class RandomFourierFeatures(TransformerMixin, BaseEstimator):
    """Random Fourier features of the RBF kernel ``exp(-γ‖x - y‖²)``, cos/sin map of norm 1.

    ``fit`` draws ``ρ_j ~ N(0, 2γ I_d)``, j = 1..D, from the kernel's Fourier transform
    (it reads only the number of columns of ``X``); ``transform`` maps each row to
    ``z(x) = D^{-1/2}[cos ρ_1ᵀx, sin ρ_1ᵀx, ...] ∈ R^{2D}`` with ``‖z(x)‖ = 1`` (to one
    rounding) for every ``x``. ``z(x)ᵀz(y) → exp(-γ‖x - y‖²)`` as D grows, with error
    ``O(D^{-1/2})``.

    Privacy: the transformer spends nothing. ``ρ`` is independent of the data, and is a
    public parameter of any model built on it (a private model releases it). The unit norm
    is what bounds the private SVM's sensitivity without any input bound.

    Parameters
    ----------
    n_components : int, default 100
        D, the number of frequencies; the output has 2D columns.
    gamma : float, default 1.0
        γ > 0, the kernel's inverse squared width (scikit-learn's convention;
        ``γ = 1/σ²`` for Li et al.'s ``exp(-‖x - y‖²/σ²)``).
    random_state : None, int or numpy Generator, optional
        Seeds the draw of ρ (public, not privacy noise); ``None`` uses OS entropy.

    Attributes
    ----------
    rho_ : ndarray of shape (n_components, n_features_in_)
        The frequencies.
    n_features_in_ : int

    References
    ----------
    .. [RR07] A. Rahimi, B. Recht, "Random features for large-scale kernel machines", NIPS 2007.
    .. [LXOJ14] H. Li, L. Xiong, L. Ohno-Machado, X. Jiang, BioMed Research International, 2014.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> Z = RandomFourierFeatures(n_components=50, gamma=0.5, random_state=0).fit_transform(X)
    >>> Z.shape
    (5, 100)
    >>> bool(np.allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=0, atol=1e-12))
    True
    """

    def __init__(self, n_components: int = 100, *, gamma: float = 1.0, random_state: Any = None):
        self.n_components = n_components
        self.gamma = gamma
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: Any = None) -> RandomFourierFeatures:
        """Draw the frequencies for ``X``'s number of columns (the values are not read)."""
        D = check_int("n_components", self.n_components, minimum=1)
        g = check_positive("gamma", self.gamma)
        X = validate_data(self, X, reset=True, dtype=np.float64)
        self.rho_ = draw_frequencies(D, X.shape[1], g, self.random_state)
        return self

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """The map z(x) of every row: shape (n_samples, 2·n_components), unit rows."""
        check_is_fitted(self, "rho_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return feature_map(X, self.rho_)

    def get_feature_names_out(self, input_features: Any = None) -> NDArray[np.object_]:
        """``cos0, sin0, cos1, sin1, ...``."""
        check_is_fitted(self, "rho_")
        names = [f"{k}{j}" for j in range(self.rho_.shape[0]) for k in ("cos", "sin")]
        return np.asarray(names, dtype=object)

    def kernel(self, X: ArrayLike, Y: ArrayLike | None = None) -> NDArray[np.float64]:
        """The approximate kernel ``z(x)ᵀz(y)`` (post-processing of the map)."""
        Zx = self.transform(X)
        Zy = Zx if Y is None else self.transform(Y)
        return Zx @ Zy.T
