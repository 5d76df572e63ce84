"""Reconstruct the distribution of the true values from additive-noise reports.

Every function here is pure post-processing of the reports ``w = x + y`` and of the
published noise law: it costs no privacy. Every reconstruction in :mod:`ppdp.local` (these
and the characteristic-vector one) returns a :class:`Reconstruction`, defined here with
:func:`project_to_simplex`. Three estimators:

* :func:`reconstruct_bayes` — Agrawal & Srikant (2000), binned: the iterative Bayes
  update with the noise density at bin midpoints.
* :func:`reconstruct_em` — Agrawal & Aggarwal (2001): EM for a piecewise-constant density
  with bin-averaged kernels. Binned (default): one O(n) pass bins the reports, then each
  iteration costs O(S·k) for S report bins and k value bins. ``binned=False`` is the direct
  O(n·k)-per-iteration EM on the individual reports (a baseline for the benchmarks).
* :func:`reconstruct_fourier` — Wu's one-step orthogonal-series (Fourier) estimator:
  empirical characteristic function of the reports divided by that of the noise, truncated
  (by default at the count :func:`auto_harmonics` reads from n, the domain and the noise
  law), shrunk or tapered, integrated over the bins and projected onto the simplex.

References
----------
.. [AS00] R. Agrawal, R. Srikant. Privacy-preserving data mining. SIGMOD 2000.
.. [AA01] D. Agrawal, C. C. Aggarwal. On the design and quantification of privacy
   preserving data mining algorithms. PODS 2001.
.. [Wu] C. W. Wu. A simple method of data perturbation and efficient algorithms for
   density estimation in privacy preserving data mining. IBM Research Report.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_int, check_nonnegative, check_option, check_positive
from ppdp.exceptions import (
    ConvergenceWarning,
    DataValidationError,
    LowUtilityWarning,
    ParameterError,
    ParameterTypeError,
    user_stacklevel,
)
from ppdp.local.additive import AdditiveRandomizer

__all__ = [
    "AUTO_HARMONICS_MAX",
    "AUTO_HARMONICS_THRESHOLD",
    "FourierMoments",
    "Reconstruction",
    "ReportHistogram",
    "auto_harmonics",
    "bin_reports",
    "fourier_moments",
    "project_to_simplex",
    "reconstruct_bayes",
    "reconstruct_em",
    "reconstruct_fourier",
]

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------ the result type


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


# ----------------------------------------------------------------------- estimators

#: Report bins for unbounded noise cover [lo − t, hi + t] with P(|y| > t) ≤ this; the two
#: outer bins (−∞, ·) and (·, ∞) hold the rest, so nothing is dropped.
_TAIL = 1e-9
_MAX_REPORT_BINS = 8192
_TAPERS = ("fejer", "lanczos", "hann")
_SHRINKAGES = ("wiener", "hard", "soft", "garrote")
#: Weight of the uniform mixed into the Fourier initialisation of the EM: EM's
#: multiplicative update can never revive a bin that starts at exactly 0.
_FOURIER_INIT_MIX = 0.01
_FOURIER_CHUNK = 8192
#: ``harmonics="auto"`` keeps harmonic i while the standard error of its complex coefficient,
#: ``s_i = 2/(√n·|φ_Y(2πi/D)|)``, is at most this (see :func:`auto_harmonics`).
AUTO_HARMONICS_THRESHOLD = 0.1
#: ... and never keeps more than this many (the cost of the pass is O(n·m)).
AUTO_HARMONICS_MAX = 64

#: ``callback(iteration, probabilities)`` after each EM/Bayes iteration (a copy; e.g. to
#: record the information loss per iteration).
Callback = Callable[[int, NDArray[np.float64]], None]


# ------------------------------------------------------------------------------ inputs


def _check_randomizer(randomizer: Any) -> AdditiveRandomizer:
    if not isinstance(randomizer, AdditiveRandomizer):
        raise ParameterTypeError(
            f"randomizer must be an AdditiveRandomizer, not {type(randomizer).__name__} "
            "(for characteristic-vector reports use its estimate_from_totals)"
        )
    return randomizer


def value_edges(randomizer: AdditiveRandomizer, bins: int | ArrayLike) -> NDArray[np.float64]:
    """The value bins: ``k`` equal bins over the declared domain, or explicit edges.

    Explicit edges must be strictly increasing and span exactly the domain.
    """
    lo, hi = randomizer.domain
    if isinstance(bins, bool):
        raise ParameterTypeError("bins must be an int >= 2 or a sequence of edges, not bool")
    if isinstance(bins, int | np.integer):
        k = check_int("bins", bins, minimum=2)
        return np.linspace(lo, hi, k + 1)
    try:
        e = np.asarray(bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterTypeError(
            f"bins ({bins!r}) must be an int >= 2 or a sequence of edges"
        ) from None
    if e.ndim != 1 or e.size < 3:
        raise ParameterError(f"bins (edges of length {e.size}) must have at least 3 edges")
    if not np.all(np.isfinite(e)) or not np.all(np.diff(e) > 0):
        raise ParameterError("bins (edges) must be finite and strictly increasing")
    tol = 1e-12 * (hi - lo)
    if abs(e[0] - lo) > tol or abs(e[-1] - hi) > tol:
        raise ParameterError(
            f"bins (edges from {e[0]:g} to {e[-1]:g}) must span the declared domain "
            f"[{lo:g}, {hi:g}]"
        )
    e = e.copy()
    e[0], e[-1] = lo, hi
    return e


def _check_reports(reports: ArrayLike, randomizer: AdditiveRandomizer) -> NDArray[np.float64]:
    try:
        arr = np.asarray(reports)
    except (TypeError, ValueError):
        raise DataValidationError("reports must be a regular array of real numbers") from None
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise DataValidationError(f"reports must be real numbers, not dtype {arr.dtype}")
    arr = arr.astype(np.float64).ravel()
    if arr.size == 0:
        raise DataValidationError("reports is empty; at least one report is needed")
    if not np.all(np.isfinite(arr)):
        raise DataValidationError("reports contain NaN or infinity")
    if randomizer.noise == "uniform":
        lo, hi = randomizer.domain
        half = randomizer.scale / 2.0
        slack = 1e-9 * (hi - lo + randomizer.scale)
        bad = (arr < lo - half - slack) | (arr > hi + half + slack)
        if np.any(bad):
            raise DataValidationError(
                f"reports: {int(bad.sum())} reports lie outside [{lo - half:g}, {hi + half:g}], "
                "impossible for values in the domain plus the declared uniform noise"
            )
    return arr


@dataclass(frozen=True)
class ReportHistogram:
    """Counts of reports in report bins: all the binned estimators need (a running total).

    ``edges`` has ``S + 1`` entries; the first and last may be ``±inf`` (unbounded noise).
    """

    edges: NDArray[np.float64]
    counts: NDArray[np.int64]

    @property
    def n(self) -> int:
        """The number of reports."""
        return int(self.counts.sum())


def report_edges(
    randomizer: AdditiveRandomizer, x_edges: NDArray[np.float64], width: float | None = None
) -> NDArray[np.float64]:
    """Report bins of width ``width`` (default: the narrowest value bin) covering the
    reports' range, plus two unbounded outer bins for unbounded noise."""
    lo, hi = randomizer.domain
    if width is None:
        width = float(np.min(np.diff(x_edges)))
    width = check_positive("report_bin_width", width)
    if randomizer.noise == "uniform":
        ext = randomizer.scale / 2.0
    else:
        ext = randomizer.noise_quantile(1.0 - _TAIL)
    span = (hi - lo) + 2.0 * ext
    if span / width > _MAX_REPORT_BINS:
        width = span / _MAX_REPORT_BINS
    m = math.ceil(ext / width - 1e-9)
    k_in = math.ceil((hi - lo) / width - 1e-9)
    inner = lo - m * width + width * np.arange(k_in + 2 * m + 1)
    if randomizer.noise == "uniform":
        return inner
    return np.concatenate([[-np.inf], inner, [np.inf]])


def bin_reports(
    reports: ArrayLike,
    randomizer: AdditiveRandomizer,
    bins: int | ArrayLike,
    *,
    report_bin_width: float | None = None,
) -> ReportHistogram:
    """One O(n) pass: count the reports in the report bins of :func:`report_edges`.

    The counts are additive over batches, so a collector may keep only them.
    """
    r = _check_randomizer(randomizer)
    x_edges = value_edges(r, bins)
    w = _check_reports(reports, r)
    edges = report_edges(r, x_edges, report_bin_width)
    finite = edges[np.isfinite(edges)]
    step = finite[1] - finite[0]
    # clip in floating point first: a far-out report must not overflow the int cast
    raw = np.floor(np.clip((w - finite[0]) / step, -2.0, edges.size + 1.0)).astype(np.int64)
    if np.isfinite(edges[0]):
        idx = np.clip(raw, 0, edges.size - 2)  # uniform: reports on the closed boundary
    else:
        idx = np.clip(raw + 1, 0, edges.size - 2)
    counts = np.bincount(idx, minlength=edges.size - 1).astype(np.int64)
    return ReportHistogram(edges, counts)


def _kernel(
    randomizer: AdditiveRandomizer, r_edges: NDArray[np.float64], x_edges: NDArray[np.float64]
) -> NDArray[np.float64]:
    """M[s, t] = P(report in bin s | x uniform on value bin t) (columns sum to 1)."""
    a, b = x_edges[:-1], x_edges[1:]
    c = r_edges[:, None]
    with np.errstate(invalid="ignore"):
        g = randomizer.noise_integrated_cdf
        cf = np.where(np.isfinite(c), c, 0.0)
        h = (g(cf - a) - g(cf - b)) / (b - a)
    h = np.where(np.isneginf(c), 0.0, np.where(np.isposinf(c), 1.0, h))
    h = np.clip(h, 0.0, 1.0)
    return np.maximum(np.diff(h, axis=0), 0.0)


def _histogram(
    reports: ArrayLike | ReportHistogram,
    r: AdditiveRandomizer,
    bins: int | ArrayLike,
    report_bin_width: float | None,
) -> ReportHistogram:
    if isinstance(reports, ReportHistogram):
        if reports.n < 1:
            raise DataValidationError("reports (a ReportHistogram) holds no reports")
        return reports
    return bin_reports(reports, r, bins, report_bin_width=report_bin_width)


def _result(
    theta: NDArray[np.float64],
    x_edges: NDArray[np.float64],
    iterations: int,
    converged: bool,
    method: str,
    details: dict[str, Any],
) -> Reconstruction:
    p = theta / theta.sum()
    return Reconstruction(
        density=p / np.diff(x_edges),
        edges=x_edges,
        iterations=iterations,
        converged=converged,
        method=method,
        details=details,
    )


def _check_stopping(tol: Any, max_iter: Any) -> tuple[float, int]:
    return check_nonnegative("tol", tol), check_int("max_iter", max_iter, minimum=1)


def _iterate(
    kernel: NDArray[np.float64],
    freq: NDArray[np.float64],
    theta: NDArray[np.float64],
    tol: float,
    max_iter: int,
    normalise_rows: bool,
    callback: Callback | None = None,
) -> tuple[NDArray[np.float64], int, bool, float]:
    """The multiplicative EM / Richardson–Lucy update until ½‖θ' − θ‖₁ < tol."""
    used = freq > 0
    k_used = kernel[used]
    f_used = freq[used]
    change = math.inf
    it = 0
    for it in range(1, max_iter + 1):
        q = k_used @ theta
        ratio = np.divide(f_used, q, out=np.zeros_like(q), where=q > 0)
        new = theta * (k_used.T @ ratio)
        if normalise_rows:
            total = new.sum()
            if total > 0:
                new /= total
        change = 0.5 * float(np.abs(new - theta).sum())
        theta = new
        if callback is not None:
            callback(it, theta / theta.sum())
        if change < tol:
            return theta, it, True, change
    return theta, it, False, change


def _warn_unconverged(method: str, tol: float, max_iter: int, change: float) -> None:
    warnings.warn(
        f"{method} did not reach the stopping rule (½‖Δθ‖₁ < tol={tol:g}) in max_iter="
        f"{max_iter} iterations (last change {change:.3g}); raise max_iter or tol",
        ConvergenceWarning,
        stacklevel=user_stacklevel(),
    )


# ------------------------------------------------------------------------- estimators


def reconstruct_bayes(
    reports: ArrayLike | ReportHistogram,
    randomizer: AdditiveRandomizer,
    bins: int | ArrayLike,
    *,
    tol: float = 1e-3,
    max_iter: int = 10_000,
    report_bin_width: float | None = None,
    callback: Callback | None = None,
) -> Reconstruction:
    """Agrawal–Srikant iterative Bayes reconstruction, binned ([AS00]_ §4).

    ``Pr′(X ∈ I_p) = Σ_s (N_s/n) · f_Y(m_s − m_p) Pr(X ∈ I_p) / Σ_t f_Y(m_s − m_t) Pr(X ∈ I_t)``
    with the noise density at the bin midpoints ``m``, from the uniform start, until the
    successive estimates differ by less than ``tol`` (half the L1 distance; [AS00]_ used a
    χ² threshold). Report bins outside the range of the midpoint kernel contribute
    nothing. Pure post-processing.

    Parameters
    ----------
    reports : array_like of float or ReportHistogram
        The released ``w = x + y`` (or their bin counts from :func:`bin_reports`).
    randomizer : AdditiveRandomizer
        The published randomizer that produced them.
    bins : int or array_like
        Value bins: ``k`` equal bins over the domain, or edges spanning it.
    tol : float, default 1e-3
        Stopping rule; 0 runs exactly ``max_iter`` iterations (no warning).
    max_iter : int, default 10000
    report_bin_width : float, optional
        Width of the report bins (default: the narrowest value bin).
    callback : callable, optional
        ``callback(iteration, probabilities)`` after every iteration.

    Returns
    -------
    Reconstruction
        ``method="bayes"``; ``ConvergenceWarning`` if ``tol > 0`` was not reached.
    """
    r = _check_randomizer(randomizer)
    tol, max_iter = _check_stopping(tol, max_iter)
    x_edges = value_edges(r, bins)
    hist = _histogram(reports, r, x_edges, report_bin_width)
    edges = hist.edges
    fin = np.isfinite(edges)
    mids = 0.5 * (edges[:-1] + edges[1:])
    # Outer unbounded bins: take the midpoint one inner width beyond the last finite edge.
    step = float(np.diff(edges[fin])[0])
    if not fin[0]:
        mids[0] = edges[1] - 0.5 * step
        mids[-1] = edges[-2] + 0.5 * step
    x_mid = 0.5 * (x_edges[:-1] + x_edges[1:])
    kernel = r.noise_pdf(mids[:, None] - x_mid[None, :])
    freq = hist.counts / hist.n
    theta0 = np.diff(x_edges) / (x_edges[-1] - x_edges[0])
    theta, it, conv, change = _iterate(
        kernel, freq, theta0, tol, max_iter, normalise_rows=True, callback=callback
    )
    if not conv and tol > 0:
        _warn_unconverged("reconstruct_bayes", tol, max_iter, change)
    details = {"tol": tol, "last_change": change, "report_bins": int(edges.size - 1), "n": hist.n}
    return _result(theta, x_edges, it, conv, "bayes", details)


def reconstruct_em(
    reports: ArrayLike | ReportHistogram,
    randomizer: AdditiveRandomizer,
    bins: int | ArrayLike,
    *,
    init: Literal["uniform", "fourier"] | ArrayLike = "uniform",
    tol: float = 1e-3,
    max_iter: int = 10_000,
    binned: bool = True,
    harmonics: int | Literal["auto"] = "auto",
    taper: str | None = None,
    shrinkage: str | None = "auto",
    report_bin_width: float | None = None,
    callback: Callback | None = None,
) -> Reconstruction:
    """Agrawal–Aggarwal EM for a piecewise-constant density ([AA01]_).

    The model: ``x`` has probability ``θ_t`` on value bin ``Ω_t`` and is uniform inside it.
    Binned (default): the reports are counted once into report bins ``I_s`` (O(n)); with
    ``M_st = P(w ∈ I_s | x ~ U(Ω_t))`` (the noise CDF integrated over the bin, exact), each
    iteration is ``θ_t ← θ_t Σ_s (N_s/n) M_st / (Mθ)_s`` — O(S·k). ``binned=False`` uses
    the density of each report, ``K_jt = (F(w_j − a_t) − F(w_j − b_t))/|Ω_t|``, and costs
    O(n·k) per iteration (the exact discretised MLE; a benchmark baseline). The
    log-likelihood is concave in θ, so EM converges to the discretised MLE.

    Stopping rule: half the L1 distance between successive θ below ``tol``. Run to
    convergence, EM fits the sampling noise of the reports (the information loss falls,
    then rises again as the iterations go on: measured in ``docs/local.md``); the default
    ``tol = 1e-3`` stops early, which is the regularisation.

    Parameters
    ----------
    reports : array_like of float or ReportHistogram
    randomizer : AdditiveRandomizer
    bins : int or array_like
        Value bins over the declared domain.
    init : {"uniform", "fourier"} or array_like, default "uniform"
        Starting θ. ``"fourier"`` starts from :func:`reconstruct_fourier` (``harmonics``,
        ``taper``, ``shrinkage``) mixed with 1 % of the uniform (a bin started at 0 would
        stay at 0); Wu reports fewer iterations from it. An array gives θ directly (normalised).
    tol : float, default 1e-3
        0 runs exactly ``max_iter`` iterations without a warning.
    max_iter : int, default 10000
    binned : bool, default True
    harmonics, taper, shrinkage
        For ``init="fourier"`` (see :func:`reconstruct_fourier`). The one-step estimate
        keeps the sampling noise of its high harmonics and the stopping rule halts EM near
        its start: with many harmonics, a ``shrinkage`` rule (e.g. ``"soft"``) gives a start
        that ends at a lower loss (``wu-fig2``). The defaults, ``harmonics="auto"`` and
        ``shrinkage="auto"``, start from the automatic count (:func:`auto_harmonics`, public
        inputs only) shrunk by the soft rule; an explicit count is used as given, with no
        shrinkage unless one is named.
    report_bin_width : float, optional
        Report bin width (default: the narrowest value bin).
    callback : callable, optional
        ``callback(iteration, probabilities)`` after every iteration (e.g. to trace the
        information loss).

    Returns
    -------
    Reconstruction
        ``method="em"`` (or ``"em-direct"``); ``details`` has ``log_likelihood`` (binned:
        of the bin counts), ``last_change``, ``init``; from a Fourier start also
        ``harmonics`` (the count used), ``harmonics_choice``, ``shrinkage`` and ``taper``.
        ``ConvergenceWarning`` if ``tol > 0`` was not reached.

    Examples
    --------
    >>> from ppdp.local import AdditiveRandomizer
    >>> r = AdditiveRandomizer(noise="laplace", scale=0.1, domain=(0.0, 1.0))
    >>> x = np.repeat([0.2, 0.7], [3000, 7000])
    >>> est = reconstruct_em(r.randomise(x, random_state=0), r, 2)
    >>> est.probabilities.round(2).tolist(), est.converged
    ([0.3, 0.7], True)
    """
    r = _check_randomizer(randomizer)
    tol, max_iter = _check_stopping(tol, max_iter)
    x_edges = value_edges(r, bins)
    k = x_edges.size - 1
    _check_shrinkage(shrinkage)
    h = _check_harmonics(harmonics)
    start: dict[str, Any] = {}
    if isinstance(init, str):
        check_option("init", init, ("uniform", "fourier"))
        if init == "fourier" and isinstance(reports, ReportHistogram):
            raise ParameterError("init ('fourier') needs the reports, not a ReportHistogram")
    if isinstance(init, str) and init == "uniform":
        theta0 = np.diff(x_edges) / (x_edges[-1] - x_edges[0])
        init_name = "uniform"
    elif isinstance(init, str):
        four = reconstruct_fourier(
            reports,  # type: ignore[arg-type]
            r,
            h,
            bins=x_edges,
            taper=taper,
            shrinkage=shrinkage,
        )
        uni = np.diff(x_edges) / (x_edges[-1] - x_edges[0])
        theta0 = (1.0 - _FOURIER_INIT_MIX) * four.probabilities + _FOURIER_INIT_MIX * uni
        init_name = "fourier"
        start = {
            key: four.details[key]
            for key in ("harmonics", "harmonics_choice", "harmonics_stop", "shrinkage", "taper")
            if key in four.details
        }
    else:
        theta0 = np.asarray(init, dtype=np.float64).ravel()
        if (
            theta0.size != k
            or not np.all(np.isfinite(theta0))
            or np.any(theta0 < 0)
            or theta0.sum() <= 0
        ):
            raise ParameterError(f"init (array) must be {k} non-negative finite weights, not all 0")
        theta0 = theta0 / theta0.sum()
        init_name = "given"
    if binned:
        hist = _histogram(reports, r, x_edges, report_bin_width)
        kernel = _kernel(r, hist.edges, x_edges)
        freq = hist.counts / hist.n
        theta, it, conv, change = _iterate(
            kernel, freq, theta0, tol, max_iter, normalise_rows=False, callback=callback
        )
        q = kernel @ theta
        used = hist.counts > 0
        loglik = float(np.sum(hist.counts[used] * np.log(np.maximum(q[used], 1e-300))))
        details: dict[str, Any] = {"report_bins": int(hist.edges.size - 1), "n": hist.n}
        method = "em"
    else:
        if isinstance(reports, ReportHistogram):
            raise ParameterError("binned=False needs the individual reports, not a ReportHistogram")
        w = _check_reports(reports, r)
        theta, it, conv, change, loglik = _em_direct(w, r, x_edges, theta0, tol, max_iter, callback)
        details = {"n": int(w.size)}
        method = "em-direct"
    if not conv and tol > 0:
        _warn_unconverged("reconstruct_em", tol, max_iter, change)
    details.update({"tol": tol, "last_change": change, "init": init_name, "log_likelihood": loglik})
    details.update(start)
    return _result(theta, x_edges, it, conv, method, details)


def _em_direct(
    w: NDArray[np.float64],
    r: AdditiveRandomizer,
    x_edges: NDArray[np.float64],
    theta: NDArray[np.float64],
    tol: float,
    max_iter: int,
    callback: Callback | None = None,
) -> tuple[NDArray[np.float64], int, bool, float, float]:
    a, b = x_edges[:-1], x_edges[1:]
    kern = (r.noise_cdf(w[:, None] - a) - r.noise_cdf(w[:, None] - b)) / (b - a)
    n = w.size
    change = math.inf
    it = 0
    conv = False
    while it < max_iter:
        it += 1
        f = kern @ theta
        ratio = np.divide(1.0, f, out=np.zeros_like(f), where=f > 0)
        new = theta * (kern.T @ ratio) / n
        change = 0.5 * float(np.abs(new - theta).sum())
        theta = new
        if callback is not None:
            callback(it, theta / theta.sum())
        if change < tol:
            conv = True
            break
    f = kern @ theta
    loglik = float(np.sum(np.log(np.maximum(f, 1e-300))))
    return theta, it, conv, change, loglik


def _empirical_characteristic(
    w: NDArray[np.float64], lo: float, d: float, m: int
) -> NDArray[np.complex128]:
    """``(1/n) Σ_j exp(2πi·h·(w_j − lo)/d)`` for h = 1..m, in O(n·m) operations.

    One complex exponential per report, then powers by repeated multiplication, in chunks
    of 8192 reports that stay in cache (the pass is memory-bound otherwise). Rounding
    error grows about linearly in h (~h·1e-16); the power is recomputed afresh every 32
    harmonics.
    """
    n = w.size
    acc = np.zeros(m, dtype=np.complex128)
    factor = 2.0 * np.pi / d
    for start in range(0, n, _FOURIER_CHUNK):
        theta = (w[start : start + _FOURIER_CHUNK] - lo) * factor
        base = np.exp(1j * theta)
        cur = base.copy()
        acc[0] += cur.sum()
        for h in range(2, m + 1):
            if h % 32 == 0:
                cur = np.exp(1j * h * theta)
            else:
                cur *= base
            acc[h - 1] += cur.sum()
    return acc / n


def _taper_weights(taper: str | None, m: int) -> NDArray[np.float64]:
    i = np.arange(1, m + 1, dtype=np.float64)
    if taper is None:
        return np.ones(m)
    check_option("taper", taper, _TAPERS)
    x = i / (m + 1.0)
    if taper == "fejer":
        return 1.0 - x
    if taper == "lanczos":
        return np.sinc(x)
    return 0.5 * (1.0 + np.cos(np.pi * x))


def _shrinkage_factors(
    shrinkage: str | None, coef: NDArray[np.complex128], var: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Per-harmonic factors in [0, 1] for the complex coefficients ``coef = b + i·a`` whose
    noise has ``E|ĉ − c|² ≤ var`` (see :func:`reconstruct_fourier`)."""
    m = coef.size
    if shrinkage is None:
        return np.ones(m)
    check_option("shrinkage", shrinkage, _SHRINKAGES)
    mod2 = np.abs(coef) ** 2
    # the universal threshold σ√(2 ln N) for the N = 2m real coefficients, σ² = var/2
    lam2 = var * math.log(2.0 * m)
    safe = np.where(mod2 > 0, mod2, 1.0)
    if shrinkage == "wiener":
        out = 1.0 - var / safe
    elif shrinkage == "garrote":
        out = 1.0 - lam2 / safe
    elif shrinkage == "soft":
        out = 1.0 - np.sqrt(lam2 / safe)
    else:  # hard
        out = (mod2 > lam2).astype(np.float64)
    return np.where(mod2 > 0, np.clip(out, 0.0, 1.0), 0.0)


def _check_harmonics(harmonics: Any) -> int | Literal["auto"]:
    """``"auto"`` or an int >= 1 (validated before any work)."""
    if isinstance(harmonics, str):
        if harmonics != "auto":
            raise ParameterError(f"harmonics ({harmonics!r}) must be 'auto' or an integer >= 1")
        return "auto"
    return check_int("harmonics", harmonics, minimum=1)


def _check_shrinkage(shrinkage: Any) -> None:
    if shrinkage is not None:
        check_option("shrinkage", shrinkage, ("auto", *_SHRINKAGES))


def _resolve_shrinkage(shrinkage: str | None, harmonics: int | str) -> str | None:
    """``"auto"``: the soft rule with ``harmonics="auto"``, none with an explicit count (the
    behaviour an explicit count always had)."""
    if shrinkage == "auto":
        return "soft" if harmonics == "auto" else None
    return shrinkage


def _auto_rule(
    randomizer: AdditiveRandomizer,
    n: int,
    threshold: float,
    max_harmonics: int,
    min_characteristic: float,
) -> tuple[int, str]:
    """The automatic count and why it stopped (see :func:`auto_harmonics`)."""
    lo, hi = randomizer.domain
    d = hi - lo
    i = np.arange(1, max_harmonics + 2, dtype=np.float64)
    phi = np.abs(np.asarray(randomizer.noise_characteristic(2.0 * np.pi * i / d), dtype=float))
    if phi[0] < min_characteristic or phi[0] == 0.0:
        raise ParameterError(
            f"harmonics ('auto'): |φ_Y(1)| = {phi[0]:.3g} < min_characteristic "
            f"({min_characteristic:g}); the {randomizer.noise} noise of scale "
            f"{randomizer.scale:g} erases harmonic 1 on a domain of width {d:g} (degenerate, "
            "cf. Wu's U[0, 20] example): no harmonic can be estimated; change the noise scale"
        )
    with np.errstate(divide="ignore", over="ignore"):
        se = 2.0 / (math.sqrt(n) * phi)
    fails = (phi < min_characteristic) | (se > threshold)
    first = int(np.argmax(fails)) + 1 if fails.any() else max_harmonics + 2
    if first > max_harmonics:
        return max_harmonics, f"the cap of {max_harmonics} harmonics"
    if first == 1:
        return 1, (
            f"harmonic 1's standard error {se[0]:.3g} > {threshold:g}; one harmonic is always kept"
        )
    if phi[first - 1] < min_characteristic:
        why = f"|φ_Y({first})| = {phi[first - 1]:.3g} < min_characteristic"
    else:
        why = f"harmonic {first}'s standard error {se[first - 1]:.3g} > {threshold:g}"
    return first - 1, why


def auto_harmonics(
    randomizer: AdditiveRandomizer,
    n: int,
    *,
    threshold: float = AUTO_HARMONICS_THRESHOLD,
    max_harmonics: int = AUTO_HARMONICS_MAX,
    min_characteristic: float = 1e-8,
) -> int:
    """The number of harmonics ``harmonics="auto"`` keeps for ``n`` reports.

    The rule uses public quantities only — ``n``, the declared domain ``[lo, hi]`` (width
    ``D``) and the published noise law's characteristic function — never the reports'
    values, so the choice is fixed before any report is read. The complex coefficient
    ``ĉ_i = 2 φ̂_Z(i)/φ_Y(i)`` of :func:`reconstruct_fourier` has
    ``E|ĉ_i − c_i|² = 4(1 − |φ_Z(i)|²)/(n|φ_Y(i)|²)``; its public bound gives the standard
    error ``s_i = 2/(√n·|φ_Y(2πi/D)|)`` (dropping ``|φ_Z(i)|²``, which would need the
    reports; it is tight at the high harmonics, where ``|φ_Z(i)| ≤ |φ_Y(i)|`` is small).

    Harmonic ``i = 1, 2, …`` is kept while ``s_i ≤ threshold`` and
    ``|φ_Y(i)| ≥ min_characteristic``; the first harmonic that fails stops the count
    (later ones are not looked at, even if they would pass), and at most ``max_harmonics``
    are kept. Harmonic 1 is always kept if the noise does not erase it (then a too-noisy
    first harmonic still warns :class:`LowUtilityWarning` in :func:`reconstruct_fourier`).

    The default threshold ``0.1`` is a twentieth of the largest value any coefficient can
    take (``|c_i| = 2|φ_X(i)| ≤ 2``) and a tenth of the standard error at which
    :func:`reconstruct_fourier` warns that a coefficient is dominated by noise; a kept
    harmonic moves the density by about ``s_i/π ≤ 0.03`` in half-L1 per standard error.
    Why not larger: the soft rule that shrinks the start zeroes a pure-noise coefficient
    with probability about ``1 − 1/(2m)``, and one that slips through leaves an error
    proportional to its ``s_i``. On development draws (not those of ``wu-fig2``; ``python
    benchmarks/bench_fourier_auto.py --sweep``), starts that kept a harmonic with ``s_i``
    above 0.2 lost badly on single draws (half-L1 up to +0.13 over the uniform start); kept
    to ``s_i ≤ 0.2``, no draw did worse than +0.009 (as at 0.1). 0.1 leaves a factor of 2,
    and a smaller threshold gave up useful harmonics (``docs/local.md``).

    Parameters
    ----------
    randomizer : AdditiveRandomizer
        The published randomizer (noise law, scale, domain).
    n : int
        The number of reports.
    threshold : float, default AUTO_HARMONICS_THRESHOLD (0.1)
    max_harmonics : int, default AUTO_HARMONICS_MAX (64)
    min_characteristic : float, default 1e-8

    Returns
    -------
    int
        The count, between 1 and ``max_harmonics``.

    Raises
    ------
    ParameterError
        If ``|φ_Y(1)| < min_characteristic`` (the noise erases every harmonic's information
        about the first one: nothing can be estimated).

    Examples
    --------
    >>> from ppdp.local import AdditiveRandomizer
    >>> auto_harmonics(AdditiveRandomizer(noise="gaussian", scale=0.1, domain=(0.0, 1.0)), 100_000)
    3
    >>> auto_harmonics(AdditiveRandomizer(noise="uniform", scale=0.5, domain=(0.0, 1.0)), 100_000)
    1
    """
    r = _check_randomizer(randomizer)
    n = check_int("n", n, minimum=1)
    threshold = check_positive("threshold", threshold)
    max_harmonics = check_int("max_harmonics", max_harmonics, minimum=1)
    tiny = check_nonnegative("min_characteristic", min_characteristic)
    return _auto_rule(r, n, threshold, max_harmonics, tiny)[0]


@dataclass(frozen=True)
class FourierMoments:
    """Running totals for the Fourier estimator: ``sums[h−1] = Σ_j exp(2πi·h·(w_j − lo)/D)``
    for h = 1..harmonics over ``n`` reports. Additive over batches (``a + b``)."""

    sums: NDArray[np.complex128]
    n: int
    harmonics: int

    def __add__(self, other: FourierMoments) -> FourierMoments:
        if not isinstance(other, FourierMoments):
            return NotImplemented
        m = min(self.harmonics, other.harmonics)
        return FourierMoments(self.sums[:m] + other.sums[:m], self.n + other.n, m)


def fourier_moments(
    reports: ArrayLike, randomizer: AdditiveRandomizer, harmonics: int | Literal["auto"] = "auto"
) -> FourierMoments:
    """One O(n·m) pass: the running totals :func:`reconstruct_fourier` needs (no reports kept).

    ``harmonics="auto"`` keeps :func:`auto_harmonics` of this batch's ``n``; totals added
    over batches keep the fewest harmonics of the parts, so a collector summing batches
    should pass the count for the expected total (``auto_harmonics(r, n_total)``).
    """
    r = _check_randomizer(randomizer)
    h = _check_harmonics(harmonics)
    w = _check_reports(reports, r)
    m = auto_harmonics(r, int(w.size)) if h == "auto" else h
    lo, hi = r.domain
    sums = _empirical_characteristic(w, lo, hi - lo, m) * w.size
    return FourierMoments(sums, int(w.size), m)


def _noise_phi(r: AdditiveRandomizer, m: int, tiny: float) -> NDArray[np.float64]:
    """``φ_Y(2πi/D)`` for i = 1..m; a harmonic the noise erases (``|φ_Y| < tiny``) raises."""
    lo, hi = r.domain
    d = hi - lo
    i = np.arange(1, m + 1, dtype=np.float64)
    phi = np.asarray(r.noise_characteristic(2.0 * np.pi * i / d), dtype=np.float64)
    bad = np.flatnonzero(np.abs(phi) < tiny)
    if bad.size:
        j = int(bad[0]) + 1
        raise ParameterError(
            f"harmonics ({m}): |φ_Y({j})| = {abs(phi[bad[0]]):.3g} < min_characteristic "
            f"({tiny:g}); the {r.noise} noise of scale {r.scale:g} erases harmonic {j} on a "
            f"domain of width {d:g} (degenerate, cf. Wu's U[0, 20] example): keep fewer "
            "harmonics, use harmonics='auto', or change the noise scale"
        )
    return phi


def reconstruct_fourier(
    reports: ArrayLike | FourierMoments,
    randomizer: AdditiveRandomizer,
    harmonics: int | Literal["auto"] = "auto",
    *,
    bins: int | ArrayLike = 50,
    taper: str | None = None,
    shrinkage: str | None = "auto",
    min_characteristic: float = 1e-8,
) -> Reconstruction:
    """Wu's one-step Fourier (orthogonal-series) estimator.

    With ``u = (x − lo)/D`` on [0, 1] and ``f(u) = 1 + Σ_i a_i sin 2πiu + b_i cos 2πiu``,
    ``b_i + i·a_i = 2 φ̂_Z(i) / φ_Y(2πi/D)`` where ``φ̂_Z(i)`` is the empirical
    characteristic function of the scaled reports (one O(n) pass per harmonic, by complex
    recursion). Harmonics ``i > harmonics`` are dropped (truncation) and the kept ones
    weighted by ``taper`` (None, "fejer", "lanczos", "hann"), or each shrunk by a factor
    chosen from its own size and its known noise (``shrinkage``, below). The series is integrated
    exactly over the value bins and the bin masses projected onto the probability simplex
    (not clipped: clipping biases upward and breaks the total).

    Every kept harmonic is checked: ``|φ_Y(i)| < min_characteristic`` raises (the noise
    erases that frequency: e.g. Wu's X ⊆ [0, 1] with Y ~ U[0, 20], where Z mod 1 is exactly
    uniform); a coefficient whose standard error ``2/(√n·|φ_Y(i)|)`` exceeds 1 warns
    :class:`LowUtilityWarning`.

    ``harmonics="auto"`` (the default) keeps harmonics ``1, 2, …`` while that standard error
    is at most :data:`AUTO_HARMONICS_THRESHOLD` (0.1) and ``|φ_Y(i)| ≥ min_characteristic``,
    stopping at the first harmonic that fails, at least 1 and at most
    :data:`AUTO_HARMONICS_MAX` (64): :func:`auto_harmonics`. It reads only ``n``, the domain
    and the noise law, never the reports' values, so it never refuses a noise law whose first
    harmonic survives (it stops before an erased harmonic instead). With running totals it
    keeps at most the harmonics they hold.

    Shrinkage (data-driven, still pure post-processing: it uses the reports, ``n`` and the
    published noise law only). The complex coefficient ``ĉ_i = b̂_i + i·â_i`` has noise
    ``E|ĉ_i − c_i|² = 4(1 − |φ_Z(i)|²)/(n|φ_Y(i)|²) ≤ v_i = 4/(n|φ_Y(i)|²)``; each real part
    has variance about ``v_i/2``. With ``λ_i² = v_i·ln(2m)`` (Donoho–Johnstone's universal
    threshold ``σ√(2 ln N)`` for the ``N = 2m`` real coefficients), ``ĉ_i`` is multiplied by

    * ``"wiener"``: ``max(0, 1 − v_i/|ĉ_i|²)`` — the empirical Wiener factor (``|c|²/(|c|² +
      v)`` with ``|c|²`` estimated without bias by ``|ĉ|² − v``);
    * ``"hard"``: ``1`` if ``|ĉ_i| > λ_i`` else ``0`` (keep or kill);
    * ``"soft"``: ``max(0, 1 − λ_i/|ĉ_i|)`` (the modulus shrunk by ``λ_i``, phase kept);
    * ``"garrote"``: ``max(0, 1 − λ_i²/|ĉ_i|²)`` (Breiman's non-negative garrote).

    A pure-noise coefficient exceeds ``λ_i`` with probability about ``1/(2m)`` (its
    ``|ĉ_i|²/v_i`` is roughly exponential), so the thresholding rules keep about half a
    noise harmonic in ``m``. Shrinkage is applied first, then the taper. Numerical caveat:
    ``v_i`` is the bound above, so the rules shrink slightly more than the exact noise would
    ask where ``|φ_Z(i)|`` is large (low harmonics, where the signal is large anyway).

    Parameters
    ----------
    reports : array_like of float or FourierMoments
        The reports, or their running totals from :func:`fourier_moments`.
    randomizer : AdditiveRandomizer
    harmonics : "auto" or int, default "auto"
        The automatic count (above) or m ≥ 1 (Wu: 10 or 12), used as given.
    bins : int or array_like, default 50
        Value bins over the domain for the returned density.
    taper : {None, "fejer", "lanczos", "hann"}
    shrinkage : {"auto", None, "wiener", "hard", "soft", "garrote"}, default "auto"
        ``"auto"``: ``"soft"`` with ``harmonics="auto"`` (the rule ``wu-fig2`` found to
        work), none with an explicit count (as before ``"auto"`` existed).
    min_characteristic : float, default 1e-8

    Returns
    -------
    Reconstruction
        ``method="fourier"``; ``details`` has ``harmonics`` (the count used),
        ``harmonics_choice`` (``"auto"`` or ``"given"``; with ``"auto"`` also
        ``harmonics_threshold``, ``harmonics_rule`` — the rule's count before any cap by the
        running totals — and ``harmonics_stop``, why it stopped), the coefficients ``a``,
        ``b`` (after shrinkage and taper), ``phi_noise``, ``noise_variance`` (``v_i``),
        ``shrinkage`` (the rule applied), ``shrinkage_factors`` and ``raw_bin_mass`` (before
        the projection).

    References
    ----------
    .. [DJ94] D. L. Donoho, I. M. Johnstone. Ideal spatial adaptation by wavelet shrinkage.
       Biometrika 81(3), 1994.
    .. [Br95] L. Breiman. Better subset regression using the nonnegative garrote.
       Technometrics 37(4), 1995.

    Examples
    --------
    >>> from ppdp.local import AdditiveRandomizer
    >>> r = AdditiveRandomizer(noise="gaussian", scale=0.02, domain=(0.0, 1.0))
    >>> x = np.repeat([0.125, 0.625], [5000, 5000])
    >>> w = r.randomise(x, random_state=0)
    >>> est = reconstruct_fourier(w, r, 12, bins=4, shrinkage="soft")
    >>> est.probabilities.round(1).tolist()
    [0.5, 0.0, 0.5, 0.0]
    >>> auto = reconstruct_fourier(w, r, bins=4)  # harmonics="auto", soft shrinkage
    >>> auto.details["harmonics"], auto.probabilities.round(1).tolist()
    (14, [0.5, 0.0, 0.5, 0.0])
    """
    r = _check_randomizer(randomizer)
    h = _check_harmonics(harmonics)
    x_edges = value_edges(r, bins)
    if taper is not None:
        check_option("taper", taper, _TAPERS)
    _check_shrinkage(shrinkage)
    shrinkage = _resolve_shrinkage(shrinkage, h)
    tiny = check_nonnegative("min_characteristic", min_characteristic)
    lo, hi = r.domain
    d = hi - lo
    if h != "auto":
        _noise_phi(r, h, tiny)  # an erased harmonic is refused before the reports are read
    mom = reports if isinstance(reports, FourierMoments) else None
    if mom is not None:
        if mom.n < 1:
            raise DataValidationError(
                f"reports (FourierMoments with n={mom.n}) must hold at least one report"
            )
        n = mom.n
    else:
        w = _check_reports(reports, r)
        n = int(w.size)
    auto: dict[str, Any] = {}
    if h == "auto":
        m, why = _auto_rule(r, n, AUTO_HARMONICS_THRESHOLD, AUTO_HARMONICS_MAX, tiny)
        auto = {"harmonics_threshold": AUTO_HARMONICS_THRESHOLD, "harmonics_rule": m}
        if mom is not None and mom.harmonics < m:
            m = mom.harmonics
            why = f"the {m} harmonics the running totals hold"
        auto["harmonics_stop"] = why
    else:
        m = h
    i = np.arange(1, m + 1, dtype=np.float64)
    phi = _noise_phi(r, m, tiny)
    weights = _taper_weights(taper, m)
    if mom is not None:
        if mom.harmonics < m:
            raise DataValidationError(
                f"reports (FourierMoments with {mom.harmonics} harmonics, n={n}) must hold "
                f"at least harmonics={m}"
            )
        emp = np.asarray(mom.sums[:m], dtype=np.complex128) / n
    else:
        emp = _empirical_characteristic(w, lo, d, m)
    se = 2.0 / (math.sqrt(n) * np.abs(phi))
    if np.any(se > 1.0):
        j = int(np.flatnonzero(se > 1.0)[0]) + 1
        warnings.warn(
            f"reconstruct_fourier: harmonic {j} has |φ_Y| = {abs(phi[j - 1]):.3g}; with n={n} "
            f"its coefficient's standard error ({se[j - 1]:.3g}) exceeds 1: the estimate is "
            "dominated by noise (keep fewer harmonics)",
            LowUtilityWarning,
            stacklevel=user_stacklevel(),
        )
    coef = 2.0 * emp / phi  # b_i + i·a_i
    var = 4.0 / (n * phi**2)
    factors = _shrinkage_factors(shrinkage, coef, var)
    b_coef = coef.real * factors * weights
    a_coef = coef.imag * factors * weights
    # Exact bin integrals of the series on the scaled edges.
    u = (x_edges - lo) / d
    arg = 2.0 * np.pi * np.outer(u, i)  # (k+1, m)
    int_cos = (np.sin(arg[1:]) - np.sin(arg[:-1])) / (2.0 * np.pi * i)
    int_sin = (np.cos(arg[:-1]) - np.cos(arg[1:])) / (2.0 * np.pi * i)
    mass = np.diff(u) + int_cos @ b_coef + int_sin @ a_coef
    probs = project_to_simplex(mass)
    details = {
        "harmonics": m,
        "harmonics_choice": "auto" if h == "auto" else "given",
        **auto,
        "taper": taper,
        "shrinkage": shrinkage,
        "shrinkage_factors": factors.tolist(),
        "noise_variance": var.tolist(),
        "n": n,
        "a": a_coef.tolist(),
        "b": b_coef.tolist(),
        "phi_noise": phi.tolist(),
        "raw_bin_mass": mass.tolist(),
    }
    return Reconstruction(
        density=probs / np.diff(x_edges),
        edges=x_edges,
        iterations=1,
        converged=True,
        method="fourier",
        details=details,
    )
