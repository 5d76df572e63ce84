"""Integer noise laws of Wu's characteristic-vector scheme, built on :mod:`ppdp.noise`.

Every sampler takes its randomness from a :class:`~ppdp.random.RandomSource` (the OS
CSPRNG by default) through :func:`ppdp.noise.exponential`, :func:`ppdp.noise.uniform`,
:func:`ppdp.noise.gaussian` and :func:`ppdp.noise.bernoulli`; nothing here draws from
numpy's generators. The heavy tails (ζ(3), inverse square) are produced from exponential
variates, whose tail has full relative precision, so the integer support has no holes
below about 2**53 (a hole would be an output possible under one input and impossible
under another: an infinite privacy loss).

All values are in *lattice units*: a report coordinate is an integer ``z/γ``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp.exceptions import ParameterError
from ppdp.random import RandomSource

__all__ = [
    "discrete_normal",
    "geometric",
    "inverse_square",
    "poisson",
    "uniform_integers",
    "zeta",
]

# Outputs are capped here (int64 safety); the mass beyond is below 2**-52 for every law.
_CAP = float(2**62)


def uniform_integers(count: int, n: int, src: RandomSource) -> NDArray[np.int64]:
    """``n`` integers uniform on ``{0, 1, …, count − 1}``, exactly, by rejection.

    With ``b`` the bit length of ``count − 1`` (at most 53), ``floor(U·2**b)`` for a
    :func:`ppdp.noise.uniform` variate ``U = M·2**-53`` is the top ``b`` bits of the 53-bit
    integer ``M`` (the product and the floor are exact), hence uniform on
    ``{0, …, 2**b − 1}``; values ``≥ count`` are redrawn (acceptance above ½). No
    modulo bias and no float rounding: every integer has probability exactly ``1/count``
    (given uniform words from the source).
    """
    if not 1 <= count <= 2**53:
        raise ParameterError(f"count ({count!r}) must be an integer in [1, 2**53]")
    bits = (count - 1).bit_length()
    out = np.zeros(n, dtype=np.int64)
    if count == 1:
        return out
    scale = float(2**bits)
    pending = np.arange(n)
    while pending.size:
        u = np.asarray(noise.uniform(pending.size, random_state=src), dtype=np.float64)
        k = np.floor(u * scale)
        accept = k < count
        out[pending[accept]] = k[accept].astype(np.int64)
        pending = pending[~accept]
    return out


def discrete_normal(sigma: float, n: int, src: RandomSource) -> NDArray[np.int64]:
    """``round(N)``, ``N ~ N(0, σ²)`` (Wu's "discrete normal"), from :func:`ppdp.noise.gaussian`."""
    g = np.asarray(noise.gaussian(sigma, n, random_state=src), dtype=np.float64)
    return np.rint(g).astype(np.int64)


def geometric(a: float, n: int, src: RandomSource) -> NDArray[np.int64]:
    """``P(k) = (a − 1) / a**(k+1)``, ``k ≥ 0``: ``floor(E / ln a)`` for an exponential ``E``."""
    e = np.asarray(noise.exponential(1.0 / math.log(a), n, random_state=src), dtype=np.float64)
    return np.floor(np.minimum(e, _CAP)).astype(np.int64)


#: Above this rate the Poisson sampler inverts a cdf table instead of counting arrivals.
POISSON_EXACT_MAX_RATE = 64.0


def poisson(rate: float, n: int, src: RandomSource) -> NDArray[np.int64]:
    """Poisson(λ).

    λ ≤ 64: the number of arrivals of a unit-rate process in ``[0, λ]`` (sums of exponential
    gaps; about ``λ + 6√λ`` vectorised rounds; exact up to the exponential sampler).
    λ > 64: inversion of the cdf table on ``[0, λ + 40√λ + 60]`` with one uniform on the
    2**-53 grid; each probability is within about 2**-52 of the exact one, so the total
    variation distance to the exact law is below 1e-12 (an extra δ of that size).
    """
    if rate > POISSON_EXACT_MAX_RATE:
        from scipy.stats import poisson as _poisson

        top = math.ceil(rate + 40.0 * math.sqrt(rate) + 60.0)
        cdf = np.asarray(_poisson.cdf(np.arange(top + 1), rate), dtype=np.float64)
        u = np.asarray(noise.uniform(n, random_state=src), dtype=np.float64)
        return np.minimum(np.searchsorted(cdf, u, side="right"), top).astype(np.int64)
    count = np.zeros(n, dtype=np.int64)
    total = np.asarray(noise.exponential(1.0, n, random_state=src), dtype=np.float64)
    active = np.flatnonzero(total <= rate)
    while active.size:
        count[active] += 1
        total[active] += np.asarray(
            noise.exponential(1.0, active.size, random_state=src), dtype=np.float64
        )
        active = active[total[active] <= rate]
    return count


def zeta(s: float, n: int, src: RandomSource) -> NDArray[np.int64]:
    """The Zipf law ``P(k) = k**(−s) / ζ(s)``, ``k ≥ 1`` (``s > 1``), by Devroye's rejection.

    Propose ``X = floor(exp(E/(s − 1)))`` (``E`` exponential: ``U**(−1/(s−1))`` without the
    holes a 2**-53-grid uniform leaves in the tail), accept when
    ``V·X·(T − 1)/(b − 1) ≤ T/b`` with ``T = (1 + 1/X)**(s−1)``, ``b = 2**(s−1)``
    (Devroye 1986, X.6.1). Acceptance rate above 0.6 for s ≥ 2.
    """
    out = np.empty(n, dtype=np.int64)
    b = 2.0 ** (s - 1.0)
    pending = np.arange(n)
    while pending.size:
        e = np.asarray(noise.exponential(1.0, pending.size, random_state=src), dtype=np.float64)
        with np.errstate(over="ignore"):
            x = np.floor(np.minimum(np.exp(e / (s - 1.0)), _CAP))
        t = (1.0 + 1.0 / x) ** (s - 1.0)
        v = np.asarray(noise.uniform(pending.size, random_state=src), dtype=np.float64)
        accept = v * x * (t - 1.0) / (b - 1.0) <= t / b
        out[pending[accept]] = x[accept].astype(np.int64)
        pending = pending[~accept]
    return out


def inverse_square(n: int, src: RandomSource) -> NDArray[np.int64]:
    """Two-sided inverse square ``P(x) = c / (|x| + 1)²`` on the integers, ``c = 6/(2π² − 6)``.

    ``M = |x| + 1`` has weight 1 at ``M = 1`` and ``2/m²`` at ``m ≥ 2``: draw ``M`` from
    ζ(2) and keep it always when ``M ≥ 2``, with probability ½ when ``M = 1``; then a fair
    sign.
    """
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        m = zeta(2.0, pending.size, src)
        keep = (m >= 2) | np.asarray(
            noise.bernoulli(0.5, pending.size, random_state=src), dtype=bool
        )
        out[pending[keep]] = m[keep] - 1
        pending = pending[~keep]
    sign = np.asarray(noise.bernoulli(0.5, n, random_state=src), dtype=bool)
    return np.where(sign, -out, out)
