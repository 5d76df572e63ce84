"""Reference LDP frequency oracles for the ``ldp-comparison`` experiment: OUE, OLH, HR.

Each oracle perturbs one categorical value per respondent (domain ``0..k-1``) and gives an
unbiased frequency estimate from the reports; all coins come from :mod:`ppdp.noise`
(OS CSPRNG unless a seed is given for the experiment). These are small, vectorised
reference implementations for measuring variance, not a production API.

* **OUE** (optimised unary encoding, Wang et al. 2017): k bits, the true one kept with
  ``p = 1/2``, every other set with ``q = 1/(e^ε + 1)``; ``f̂_j = (c_j/n − q)/(p − q)``.
  ε-LDP: two inputs differ in two bits, ratio ``(p(1−q))/(q(1−p)) = e^ε``.
* **OLH** (optimised local hashing): ``g = round(e^ε) + 1`` buckets, a fresh hash
  ``h(v) = ((a·v + b) mod P) mod g`` per respondent (P = 2^31 − 1, a ≠ 0), generalised randomized
  response on the bucket: keep w.p. ``e^ε/(e^ε + g − 1)``; ``f̂_j = (C_j/n − 1/g)/(p − 1/g)``
  with ``C_j`` the reports whose bucket contains j. ε-LDP (GRR on the bucket).
* **HR** (Hadamard response, Acharya–Sun–Zhang 2019): ``K`` = the least power of two
  above k; input v owns the half ``C_v = {c : H[v+1, c] = +1}`` of ``0..K-1``; output a
  uniform element of ``C_v`` w.p. ``e^ε/(e^ε + 1)``, else of its complement;
  ``f̂_v = 2(e^ε + 1)/(e^ε − 1) · (share of outputs in C_v − 1/2)``. ε-LDP (every output
  has probability ``2e^ε/((e^ε+1)K)`` or ``2/((e^ε+1)K)``).

The uniform choice of a bucket or Hadamard column uses 53-bit uniforms (``floor(U·m)``);
for ``m`` not a power of two its probabilities are off by less than ``m·2^-53``.

References
----------
T. Wang, J. Blocki, N. Li, S. Jha. Locally differentially private protocols for frequency
estimation. USENIX Security 2017. J. Acharya, Z. Sun, H. Zhang. Hadamard response:
estimating distributions privately, efficiently, and with little communication. AISTATS 2019.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp.random import resolve_random_state

__all__ = [
    "ORACLES",
    "hr_estimate",
    "hr_variance",
    "olh_estimate",
    "oue_estimate",
    "oue_variance",
]

_P31 = (1 << 31) - 1  # prime; a·v + b < 2^62 fits in int64 for v < P


def _uniform_int(m: int, n: int, src: Any) -> NDArray[np.int64]:
    u = np.asarray(noise.uniform(n, random_state=src), dtype=np.float64)
    return np.minimum(np.floor(u * m), m - 1).astype(np.int64)


def oue_estimate(
    values: NDArray[np.int64], k: int, epsilon: float, *, random_state: Any = None
) -> NDArray[np.float64]:
    """Frequencies of ``values`` (ints in ``0..k-1``) estimated through OUE reports."""
    src = resolve_random_state(random_state)
    n = values.size
    q = 1.0 / (math.exp(epsilon) + 1.0)
    u = np.asarray(noise.uniform((n, k), random_state=src), dtype=np.float64)
    thresholds = np.full((n, k), q)
    thresholds[np.arange(n), values] = 0.5
    counts = (u < thresholds).sum(axis=0)
    return (counts / n - q) / (0.5 - q)


def olh_estimate(
    values: NDArray[np.int64], k: int, epsilon: float, *, random_state: Any = None
) -> NDArray[np.float64]:
    """Frequencies estimated through OLH reports (hash seeds and buckets per respondent)."""
    src = resolve_random_state(random_state)
    n = values.size
    e = math.exp(epsilon)
    g = max(2, round(e) + 1)
    p = e / (e + g - 1.0)
    a = (src.uint64(n) % np.uint64(_P31 - 1)).astype(np.int64) + 1
    b = (src.uint64(n) % np.uint64(_P31)).astype(np.int64)

    def bucket(v: Any) -> NDArray[np.int64]:
        return ((a * v + b) % _P31) % g

    true_bucket = bucket(values.astype(np.int64))
    keep = np.asarray(noise.bernoulli(p, n, random_state=src), dtype=bool)
    shift = 1 + _uniform_int(g - 1, n, src)  # another bucket, uniformly
    y = np.where(keep, true_bucket, (true_bucket + shift) % g)
    support = np.array([np.count_nonzero(bucket(j) == y) for j in range(k)], dtype=np.float64)
    return (support / n - 1.0 / g) / (p - 1.0 / g)


def _popcount_parity(x: NDArray[np.int64]) -> NDArray[np.int64]:
    x = x.copy()
    parity = np.zeros_like(x)
    while np.any(x):
        parity ^= x & 1
        x >>= 1
    return parity


def hr_estimate(
    values: NDArray[np.int64], k: int, epsilon: float, *, random_state: Any = None
) -> NDArray[np.float64]:
    """Frequencies estimated through Hadamard-response reports."""
    src = resolve_random_state(random_state)
    n = values.size
    big_k = 1 << math.ceil(math.log2(k + 1))
    e = math.exp(epsilon)
    rows = values.astype(np.int64) + 1
    inside = np.asarray(noise.bernoulli(e / (e + 1.0), n, random_state=src), dtype=bool)
    c = _uniform_int(big_k, n, src)
    # H[r, c] = (-1)^{popcount(r & c)}: in C_r iff the parity is 0. Flipping c's bit at the
    # lowest set bit of r moves c between C_r and its complement (a bijection).
    in_set = _popcount_parity(rows & c) == 0
    low = rows & -rows
    c = np.where(in_set == inside, c, c ^ low)
    shares = np.empty(k)
    for v in range(k):
        shares[v] = np.mean(_popcount_parity((v + 1) & c) == 0)
    return 2.0 * (e + 1.0) / (e - 1.0) * (shares - 0.5)


def oue_variance(epsilon: float) -> float:
    """``n·Var`` of OUE (and OLH) per item at low frequency: ``4e^ε/(e^ε − 1)²``."""
    e = math.exp(epsilon)
    return 4.0 * e / (e - 1.0) ** 2


def hr_variance(epsilon: float) -> float:
    """``n·Var`` of HR per item at low frequency: ``((e^ε + 1)/(e^ε − 1))²``."""
    e = math.exp(epsilon)
    return ((e + 1.0) / (e - 1.0)) ** 2


#: name -> (estimator, n·Var formula at low frequency)
ORACLES = {
    "OUE": (oue_estimate, oue_variance),
    "OLH": (olh_estimate, oue_variance),
    "HR": (hr_estimate, hr_variance),
}
