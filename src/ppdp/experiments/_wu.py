"""What the Wu experiments share: the bimodal population, histograms, loss helpers.

The population (our choice; Wu's report plots "a bimodal density" without its formula):
an equal mixture of N(0.3, 0.08²) and N(0.7, 0.10²) truncated to [0, 1]. Samples are drawn
by rejection from a seeded numpy generator: they are the *private data* of the simulation,
not privacy noise (all noise comes from :mod:`ppdp.noise` through the randomizers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

from ppdp.mechanisms import gaussian_delta

__all__ = [
    "MIXTURE",
    "bimodal_density",
    "bimodal_probabilities",
    "bimodal_sample",
    "continuous_gaussian_epsilon",
    "empirical_probabilities",
    "half_l1",
]

#: (weight, mean, standard deviation) of the two components, truncated to [0, 1].
MIXTURE = ((0.5, 0.3, 0.08), (0.5, 0.7, 0.10))


def _mass(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.zeros(np.broadcast(a, b).shape)
    for w, mu, sd in MIXTURE:
        out = out + w * (ndtr((b - mu) / sd) - ndtr((a - mu) / sd))
    return out


_TOTAL = float(_mass(np.array(0.0), np.array(1.0)))


def bimodal_density(x: Any) -> NDArray[np.float64]:
    """The population density on [0, 1] (0 outside)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for w, mu, sd in MIXTURE:
        out = out + w * np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
    return np.where((x >= 0) & (x <= 1), out / _TOTAL, 0.0)


def bimodal_probabilities(edges: Any) -> NDArray[np.float64]:
    """Population probability of each bin ``[edges[i], edges[i+1])`` (edges inside [0, 1])."""
    e = np.asarray(edges, dtype=np.float64)
    return _mass(e[:-1], e[1:]) / _TOTAL


def bimodal_sample(n: int, seed: np.random.SeedSequence) -> NDArray[np.float64]:
    """``n`` draws from the truncated mixture (rejection; seeded, data not noise)."""
    rng = np.random.default_rng(seed)
    out = np.empty(0)
    while out.size < n:
        m = int(1.1 * (n - out.size)) + 16
        comp = rng.random(m) < MIXTURE[0][0]
        mu = np.where(comp, MIXTURE[0][1], MIXTURE[1][1])
        sd = np.where(comp, MIXTURE[0][2], MIXTURE[1][2])
        x = mu + sd * rng.standard_normal(m)
        out = np.concatenate([out, x[(x >= 0) & (x <= 1)]])
    return out[:n]


def empirical_probabilities(values: Any, edges: Any) -> NDArray[np.float64]:
    """The empirical histogram of ``values`` on ``edges`` as probabilities (Wu's truth)."""
    counts = np.histogram(np.asarray(values, dtype=np.float64), bins=np.asarray(edges))[0]
    return counts / counts.sum()


def half_l1(p: Any, q: Any) -> float:
    """``½ Σ |p − q|``."""
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


def continuous_gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """The smallest ε at which N(0, σ²I) on an L2-sensitivity query is (ε, δ)-DP (Balle–Wang
    exact profile, bisection rounded up): the C.5 upper bound for the rounded Gaussian."""
    if gaussian_delta(sigma, 0.0, sensitivity) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(sigma, hi, sensitivity) > delta:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(sigma, mid, sensitivity) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
