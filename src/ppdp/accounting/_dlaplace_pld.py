"""The discrete Laplace mechanism's PLD in closed form, with at most ``2ε/h + 4`` points.

``dp-accounting``'s ``from_discrete_laplace_mechanism`` evaluates the privacy loss at every
integer between the two centres, in Python: Δ = 2²⁴ (a GroupBy sum without ``by``) took
14.7 s and 1.9 GB. Here the integers whose loss rounds up to the same multiple of ``h``
are one run, and a run's mass is a geometric sum in closed form, so the work is
``O(min(Δ, 2ε/h))`` whatever Δ. Each loss gets the grid index the library gives it
(rounded up, in the same float operations), so the result is the library's PLD up to the
order of float additions; ``docs/proofs/discrete-laplace.md`` §3 gives the law and why the
rounded-up PLD dominates the exact one under any composition.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

__all__ = ["rounded_pmf"]


def _index(parameter: float, interval: float, m: np.ndarray) -> np.ndarray:
    """``⌈fl(fl(m·a)/h)⌉``: the grid index ``dp-accounting`` gives the loss ``m·a``.

    IEEE products and quotients are correctly rounded, hence monotone: nondecreasing in m.
    """
    return np.ceil(m.astype(float) * parameter / interval).astype(np.int64)


def _interior_runs(
    parameter: float, sensitivity: int, interval: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of ``y ∈ [1, Δ−1]`` whose loss ``a(Δ − 2y)`` has the same grid index ``j``.

    Returns the runs' first ``y``, their lengths and their ``j``. The index is
    nonincreasing in ``y``, so the runs are intervals, found from the buckets' boundaries
    ``g(j) = min{y >= 1 : j(y) <= j}`` in ``O(number of buckets)``, or one run per ``y``
    when there are fewer integers than buckets.
    """
    d = sensitivity

    def index_at(y: np.ndarray) -> np.ndarray:
        return _index(parameter, interval, d - 2 * y)

    j_hi, j_lo = (int(v) for v in index_at(np.array([1, d - 1], dtype=np.int64)))
    if d - 1 <= j_hi - j_lo + 1:
        ys = np.arange(1, d, dtype=np.int64)
        return ys, np.ones_like(ys), index_at(ys)
    js = np.arange(j_lo - 1, j_hi + 1, dtype=np.int64)
    # A float first guess (ratio a(Δ − 2y) <= jh), then exact steps against index_at.
    guess = np.ceil((d - js * (interval / parameter)) / 2.0)
    g = np.clip(np.nan_to_num(guess), 1, d).astype(np.int64)
    for _ in range(64):
        down = (g > 1) & (index_at(g - 1) <= js)  # an earlier y also fits
        up = (g < d) & (index_at(np.minimum(g, d - 1)) > js)  # g itself does not
        if not (down.any() or up.any()):
            break
        g = g - down + up
    else:  # pragma: no cover - the guess is within a few integers of g(j)
        raise RuntimeError("discrete Laplace PLD: bucket boundaries did not settle")
    first, stop = g[1:], g[:-1]  # bucket j = js[k + 1]: g(j) <= y < g(j − 1)
    keep = stop > first
    return first[keep], (stop - first)[keep], js[1:][keep]


def rounded_pmf(parameter: float, sensitivity: int, interval: float) -> dict[int, float]:
    """The pessimistic rounded PLD of ``(DL(a) + Δ, DL(a))``, ``P(k) ∝ exp(−a|k|)``.

    Parameters
    ----------
    parameter : float
        ``a`` (> 0), the inverse scale.
    sensitivity : int
        Δ >= 1, the shift.
    interval : float
        ``h``, the PLD's discretization: loss ``ℓ`` is recorded at index ``⌈ℓ/h⌉``.

    Returns
    -------
    dict
        ``{index: probability}``: loss ``+aΔ`` with probability ``1/(1+e^{−a})``, ``−aΔ``
        with ``e^{−aΔ}/(1+e^{−a})``, and ``a(Δ − 2y)`` with ``tanh(a/2)·e^{−ay}`` for
        ``y = 1 … Δ−1``, each loss rounded up to the grid as ``dp-accounting``'s
        ``from_discrete_laplace_mechanism`` rounds it. At most ``2aΔ/h + 4`` entries.
    """
    d = sensitivity
    norm = 1.0 + math.exp(-parameter)
    out: defaultdict[int, float] = defaultdict(float)
    top, bottom = _index(parameter, interval, np.array([d, -d], dtype=np.int64)).tolist()
    out[top] += 1.0 / norm
    out[bottom] += math.exp(-parameter * d) / norm
    if d > 1:
        starts, lengths, index = _interior_runs(parameter, d, interval)
        # Σ_{y=u}^{u+n−1} tanh(a/2)·e^{−ay} = e^{−au}·(1 − e^{−an}) / (1 + e^{−a}).
        u, n = starts.astype(float), lengths.astype(float)
        mass = np.exp(-parameter * u) * -np.expm1(-parameter * n) / norm
        for j, m in zip(index.tolist(), mass.tolist(), strict=True):
            out[j] += m
    return dict(out)
