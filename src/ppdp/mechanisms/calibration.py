"""Calibration of the Gaussian mechanism: the classic bound and Balle & Wang's analytic one.

Both return the noise standard deviation σ for a query of L2 sensitivity Δ. Privacy only
depends on the ratio ``r = σ / Δ``, so the solvers work on unit sensitivity and scale.
:func:`zcdp_delta` converts a ρ-zCDP guarantee (a whole Gaussian release) to (ε, δ).

References
----------
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
   Theorem A.1 (the classic bound, valid for ε < 1).
.. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential Privacy:
   Analytical Calibration and Optimal Denoising", ICML 2018, Theorem 8 and Algorithm 1.
.. [BS16] M. Bun and T. Steinke, "Concentrated Differential Privacy", TCC 2016, Prop. 1.3.
.. [CKS20] C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential
   Privacy", NeurIPS 2020, Prop. 12 (the conversion ``TableSynthesizer`` plans with).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

from ppdp.exceptions import CalibrationError, ParameterError

__all__ = ["analytic_gaussian_sigma", "classic_gaussian_sigma", "gaussian_delta", "zcdp_delta"]

#: Relative safety margin on δ: the solver aims at δ·(1 − 1e-7), far above the ~1e-10
#: relative error of evaluating δ(σ) in double precision, so the returned σ never gives
#: more than δ. It costs σ a relative ~1e-9.
_DELTA_MARGIN = 1e-7


def _log_delta(ratio: float, epsilon: float) -> float:
    """log δ(σ) of [BW18] Theorem 8 for σ/Δ = ``ratio``; ``-inf`` when δ(σ) is 0.

    δ = Φ(a − b) − e^ε Φ(−a − b) with a = Δ/(2σ), b = εσ/Δ. Written as
    Φ(a − b) · (1 − exp(ε + log Φ(−a − b) − log Φ(a − b))) and evaluated with ``log_ndtr``
    and ``expm1`` so neither term underflows for large ε or tiny δ.
    """
    a = 0.5 / ratio
    b = epsilon * ratio
    log_t1 = float(log_ndtr(a - b))
    log_t2 = epsilon + float(log_ndtr(-a - b))
    x = log_t2 - log_t1
    # Each log is known to a few ulps: x to about ``err`` absolutely. Using ``x − err``
    # overstates δ by the relative ``err/|x|`` at most (tiny ε with tiny δ makes |x| small:
    # ε = 1e-6, δ = 1e-20 lost 1.2e-7 of its margin without it).
    err = 2.0**-48 * (abs(log_t1) + abs(log_t2) + epsilon)
    x -= err
    if a < 1.0 and b < 1.0 and x > -(2.0**-30):
        # Both Φ arguments are near 0, where log Φ ≈ −0.69 is only known to ~1e-16
        # absolutely: x cannot be resolved. Use the ε = 0 profile, δ(σ) ≤ 2Φ(a) − 1 =
        # erf(a/√2), which only overstates δ (so σ is never too small).
        return math.log(math.erf(a / math.sqrt(2.0)))
    if x >= 0.0:  # mathematically x < 0; equality only by rounding when δ(σ) ≪ Φ(a − b)
        return -math.inf
    return log_t1 + math.log(-math.expm1(x))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """The smallest δ for which N(0, σ²) noise on an L2-sensitivity-Δ query is (ε, δ)-DP.

    Exact characterisation of [BW18] Theorem 8, evaluated in log space.
    """
    return math.exp(_log_delta(sigma / sensitivity, epsilon))


def zcdp_delta(rho: float, epsilon: float) -> float:
    """The δ at which ρ-zCDP implies (ε, δ)-DP ([CKS20]).

    ``δ = inf_{α>1} exp((α−1)(αρ−ε) + α·log(1−1/α)) / (α−1)``, evaluated at the α where the
    exponent's derivative vanishes, found by bisection (any α > 1 gives a valid δ, so the
    bisection's accuracy only costs tightness), and never above [BS16]'s
    ``exp(−(ε−ρ)²/(4ρ))``. The same evaluation as ``ppdp.publish.table_synth_model``'s
    ``cdp_delta``, so a plan's stated (ε, δ) is checked with the arithmetic that made it.

    >>> zcdp_delta(0.0107, 1.0) <= 1e-9
    True
    """
    if rho <= 0.0:
        return 0.0
    if epsilon <= rho:
        return 1.0
    classic = math.exp(-((epsilon - rho) ** 2) / (4.0 * rho))
    lo, hi = 1.000001, (epsilon + 1.0) / (2.0 * rho) + 2.0
    for _ in range(200):
        a = 0.5 * (lo + hi)
        if (2.0 * a - 1.0) * rho - epsilon + math.log1p(-1.0 / a) < 0.0:
            lo = a
        else:
            hi = a
    a = 0.5 * (lo + hi)
    log_d = (a - 1.0) * (a * rho - epsilon) + a * math.log1p(-1.0 / a) - math.log(a - 1.0)
    return min(classic, math.exp(min(log_d, 0.0)))


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """σ = Δ √(2 ln(1.25/δ)) / ε ([DR14] Theorem A.1); the theorem needs ε < 1."""
    if not epsilon < 1.0:
        raise ParameterError(
            f"epsilon ({epsilon!r}) must be < 1 for the classic Gaussian calibration; "
            "use calibration='analytic', which is valid (and tighter) for every epsilon"
        )
    sigma = sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    return math.nextafter(sigma, math.inf)  # never round below the theorem's value


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest σ (up to a relative ~1e-9, rounded up) with δ(σ) ≤ δ ([BW18] Alg. 1).

    Solves ``log δ(σ) = log δ`` on ``log σ`` with Brent's method inside a bracket that is
    grown until it provably contains the root, then moves up until the double-precision
    value of δ(σ) is below the target. δ(σ) is strictly decreasing in σ.

    Raises
    ------
    CalibrationError
        If no bracket is found (only for parameters far outside the validated ranges).
    """
    target = math.log(delta) + math.log1p(-_DELTA_MARGIN)

    def f(log_ratio: float) -> float:
        return _log_delta(math.exp(log_ratio), epsilon) - target

    # Start from the classic formula's ratio (valid or not, it is the right order), or,
    # for tiny ε, from the ratio at which even ε = 0 holds: δ(σ) ≤ 2Φ(Δ/2σ) − 1 ≤
    # Δ/(σ√(2π)), so σ/Δ = 1/(δ√(2π)) suffices (else the brackets never reach the root).
    classic = math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    hi = math.log(min(classic, 1.0 / (delta * math.sqrt(2.0 * math.pi))))
    lo = hi
    for _ in range(200):
        if f(hi) <= 0.0:
            break
        hi += 1.0
    else:
        raise CalibrationError(
            f"no upper bracket for the analytic Gaussian at ε={epsilon}, δ={delta}"
        )
    for _ in range(200):
        lo -= 1.0
        if f(lo) > 0.0:
            break
    else:
        raise CalibrationError(
            f"no lower bracket for the analytic Gaussian at ε={epsilon}, δ={delta}"
        )
    if f(hi) == -math.inf:
        # The root lies where δ(σ) is too small to evaluate: bisect on the sign only.
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if f(mid) > 0.0:
                lo = mid
            else:
                hi = mid
        root = hi
    else:
        root = brentq(f, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)
    ratio = math.exp(root)
    step = 1e-15
    while _log_delta(ratio, epsilon) > target:  # land on the safe side of the root
        ratio *= 1.0 + step
        step *= 2.0
    return ratio * sensitivity
