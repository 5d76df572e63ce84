"""The black-box audit of RELIABILITY.md B3: event selection, then a Clopper–Pearson bound.

Given samplers for a mechanism run on neighbouring datasets D and D′ (each returning ``n``
scalar statistics of the output), the audit

1. *selects* an event on ``n_select`` draws per side: 99 pooled-quantile thresholds ``t``
   × {``s > t``, ``s ≤ t``} × both directions (D against D′ and D′ against D); the event
   with the largest Clopper–Pearson lower bound on ε at ``selection_alpha`` wins, and these
   draws are discarded;
2. *measures* that event on ``n_measure`` fresh draws per side: ``k_hi`` hits on the side
   where it is likely, ``k_lo`` on the other, and reports
   ``ε_lb = ln((CP_low(k_hi; α/2) − δ) / CP_up(k_lo; α/2))`` (floored at 0).

If the mechanism is (ε, δ)-DP then ``p_hi ≤ e^ε p_lo + δ`` for every event, and with
probability at least ``1 − α`` both Clopper–Pearson intervals hold, so
``P[ε_lb > ε] ≤ α``: a correct mechanism fails the audit with probability at most α
(because the event was fixed before the fresh draws were made). The audit passes iff
``ε_lb ≤ claimed_epsilon``. See ``docs/audit.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta

from ppdp._validation import check_delta, check_int, check_nonnegative, check_real
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = ["AuditResult", "Sampler", "audit", "clopper_pearson", "epsilon_lower_bound"]

#: ``sampler(n, source)`` returns ``n`` scalar statistics of independent runs of the
#: mechanism on one fixed dataset, drawing all randomness from ``source``.
Sampler = Callable[[int, RandomSource], Any]

_N_QUANTILES = 99


def clopper_pearson(
    k: Any, n: int, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One-sided exact Clopper–Pearson bounds for ``k`` successes in ``n`` trials.

    Returns ``(lower, upper)`` with ``P[p < lower] ≤ alpha`` and ``P[p > upper] ≤ alpha``
    each; ``lower = 0`` when ``k = 0`` and ``upper = 1`` when ``k = n``.
    """
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, beta.ppf(1.0 - alpha, k + 1, n - k), 1.0)
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def epsilon_lower_bound(
    k_hi: Any, k_lo: Any, n: int, *, alpha: float, delta: float = 0.0
) -> NDArray[np.float64]:
    """``ln((CP_low(k_hi; α/2) − δ) / CP_up(k_lo; α/2))``, ``-inf`` where the numerator ≤ 0.

    Valid simultaneously for the two counts with probability ≥ 1 − α (a union bound over
    the two one-sided intervals).
    """
    low, _ = clopper_pearson(k_hi, n, alpha / 2.0)
    _, up = clopper_pearson(k_lo, n, alpha / 2.0)
    num = low - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0.0, np.log(np.maximum(num, 1e-300) / up), -np.inf)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditResult:
    """The outcome of one audit.

    Attributes
    ----------
    epsilon_lower_bound : float
        ε_lb from the measurement draws, floored at 0; holds with probability ≥ 1 − α.
    claimed_epsilon, delta : float
        The claim under audit.
    passed : bool
        ``epsilon_lower_bound <= claimed_epsilon``.
    event : str
        The selected event, e.g. ``"s > 1.52 (likelier under D')"``.
    threshold : float
    above : bool
        True for ``s > threshold``, False for ``s ≤ threshold``.
    hi_side : str
        ``"D"`` or ``"D'"``: the side whose hit count is ``k_hi``.
    k_hi, k_lo : int
        Hits of the event among the ``n_measure`` fresh draws of each side.
    selection_bound : float
        The event's ε lower bound on the selection draws at ``selection_alpha``.
    n_select, n_measure : int
    alpha, selection_alpha : float
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    passed: bool
    event: str
    threshold: float
    above: bool
    hi_side: str
    k_hi: int
    k_lo: int
    selection_bound: float
    n_select: int
    n_measure: int
    alpha: float
    selection_alpha: float

    @property
    def counts(self) -> tuple[int, int]:
        """``(k_hi, k_lo)``."""
        return self.k_hi, self.k_lo

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        claim = f"ε={self.claimed_epsilon:g}" + (f", δ={self.delta:g}" if self.delta else "")
        return (
            f"{verdict}: ε lower bound {self.epsilon_lower_bound:.4f} vs claimed {claim} "
            f"(event {self.event}; hits {self.k_hi} vs {self.k_lo} of {self.n_measure} fresh "
            f"draws per side; α={self.alpha:g})"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "claimed_epsilon": self.claimed_epsilon,
            "delta": self.delta,
            "passed": self.passed,
            "event": self.event,
            "threshold": self.threshold,
            "above": self.above,
            "hi_side": self.hi_side,
            "k_hi": self.k_hi,
            "k_lo": self.k_lo,
            "selection_bound": self.selection_bound,
            "n_select": self.n_select,
            "n_measure": self.n_measure,
            "alpha": self.alpha,
            "selection_alpha": self.selection_alpha,
        }


def _draw(sampler: Sampler, n: int, source: RandomSource, side: str) -> NDArray[np.float64]:
    out = np.asarray(sampler(n, source))
    if out.shape != (n,) or out.dtype.kind not in "iuf":
        raise DataValidationError(
            f"sampler for {side} must return {n} real statistics as a 1-D array, "
            f"got dtype {out.dtype} and shape {out.shape}"
        )
    stats = out.astype(np.float64, copy=False)
    if not np.isfinite(stats).all():
        raise DataValidationError(f"sampler for {side} returned NaN or infinite statistics")
    return stats


def _hits(sorted_stats: NDArray[np.float64], thresholds: NDArray[np.float64]) -> NDArray[np.int64]:
    """Number of statistics ``> t`` for each threshold ``t``."""
    return sorted_stats.size - np.searchsorted(sorted_stats, thresholds, side="right")


def _check_probability(name: str, value: Any) -> float:
    v = check_real(name, value)
    if not (0.0 < v < 1.0):
        raise ParameterError(f"{name} ({v!r}) must be in (0, 1)")
    return v


def audit(
    sample_d: Sampler,
    sample_d_prime: Sampler,
    *,
    claimed_epsilon: float,
    delta: float = 0.0,
    n_select: int = 5_000,
    n_measure: int = 20_000,
    alpha: float = 1e-6,
    selection_alpha: float = 0.05,
    random_state: RandomState = None,
) -> AuditResult:
    """Audit a claimed (ε, δ) guarantee from samples of a mechanism on neighbours D, D′.

    Parameters
    ----------
    sample_d, sample_d_prime : callable ``(n, source) -> array of n floats``
        Run the mechanism ``n`` times on D (resp. D′) and return a scalar statistic of each
        output (the output itself for a scalar mechanism). All randomness must come from
        ``source``. Choose D, D′ at the worst case of the sensitivity analysis.
    claimed_epsilon : float
        The ε the mechanism claims (≥ 0).
    delta : float, default 0.0
        The δ it claims.
    n_select, n_measure : int
        Draws per side for event selection and for measurement (RELIABILITY.md B3 uses
        5,000 and 20,000; vectorised mechanisms should use far more, see ``docs/audit.md``).
    alpha : float, default 1e-6
        The false-positive rate: a mechanism that really is (ε, δ)-DP fails the audit with
        probability at most ``alpha``.
    selection_alpha : float, default 0.05
        Confidence used only to rank candidate events (it does not affect validity).
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        Passed (resolved once) to the samplers; ``None`` uses the OS CSPRNG.

    Returns
    -------
    AuditResult

    Examples
    --------
    Randomised response with ε = ln 3 (answer truthfully with probability 3/4):

    >>> import math
    >>> import numpy as np
    >>> from ppdp import noise
    >>> def rr(truth):
    ...     def sample(n, src):
    ...         return np.where(noise.uniform(n, random_state=src) < 0.75, truth, 1 - truth)
    ...     return sample
    >>> result = audit(rr(0), rr(1), claimed_epsilon=math.log(3), random_state=0)
    >>> result.passed, 0.9 < result.epsilon_lower_bound <= math.log(3)
    (True, True)
    """
    eps = check_nonnegative("claimed_epsilon", claimed_epsilon)
    delta = check_delta("delta", delta)
    n_select = check_int("n_select", n_select, minimum=100)
    n_measure = check_int("n_measure", n_measure, minimum=100)
    alpha = _check_probability("alpha", alpha)
    selection_alpha = _check_probability("selection_alpha", selection_alpha)
    source = resolve_random_state(random_state)

    # Phase 1: selection.
    s0 = np.sort(_draw(sample_d, n_select, source, "D"))
    s1 = np.sort(_draw(sample_d_prime, n_select, source, "D'"))
    pooled = np.concatenate([s0, s1])
    levels = np.arange(1, _N_QUANTILES + 1) / (_N_QUANTILES + 1)
    thresholds = np.unique(np.quantile(pooled, levels, method="lower"))
    above0, above1 = _hits(s0, thresholds), _hits(s1, thresholds)
    below0, below1 = n_select - above0, n_select - above1
    # Candidates: (hits on the "hi" side, hits on the "lo" side, above?, hi side).
    candidates = [
        (above1, above0, True, "D'"),
        (above0, above1, True, "D"),
        (below1, below0, False, "D'"),
        (below0, below1, False, "D"),
    ]
    best: tuple[float, float, bool, str] | None = None
    for k_hi, k_lo, above, hi_side in candidates:
        bounds = epsilon_lower_bound(k_hi, k_lo, n_select, alpha=selection_alpha, delta=delta)
        i = int(np.argmax(bounds))
        if best is None or bounds[i] > best[0]:
            best = (float(bounds[i]), float(thresholds[i]), above, hi_side)
    assert best is not None
    selection_bound, threshold, above, hi_side = best

    # Phase 2: measurement on fresh draws.
    m0 = _draw(sample_d, n_measure, source, "D")
    m1 = _draw(sample_d_prime, n_measure, source, "D'")
    hit0 = int(np.count_nonzero(m0 > threshold if above else m0 <= threshold))
    hit1 = int(np.count_nonzero(m1 > threshold if above else m1 <= threshold))
    k_hi, k_lo = (hit1, hit0) if hi_side == "D'" else (hit0, hit1)
    raw = float(epsilon_lower_bound(k_hi, k_lo, n_measure, alpha=alpha, delta=delta))
    eps_lb = max(raw, 0.0)
    relation = ">" if above else "≤"
    event = f"s {relation} {threshold:.6g} (likelier under {hi_side})"
    return AuditResult(
        epsilon_lower_bound=eps_lb,
        claimed_epsilon=eps,
        delta=delta,
        passed=eps_lb <= eps,
        event=event,
        threshold=threshold,
        above=above,
        hi_side=hi_side,
        k_hi=k_hi,
        k_lo=k_lo,
        selection_bound=selection_bound if math.isfinite(selection_bound) else 0.0,
        n_select=n_select,
        n_measure=n_measure,
        alpha=alpha,
        selection_alpha=selection_alpha,
    )
