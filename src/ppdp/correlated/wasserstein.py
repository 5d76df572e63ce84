"""The Wasserstein mechanism (Song, Wang & Chaudhuri 2017, B.2) for small chains, by enumeration.

Privacy note: ``docs/proofs/pufferfish-mqm.md`` (section "Baselines").
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp._validation import check_epsilon, check_int
from ppdp.accounting import Accountant
from ppdp.accounting.events import Pufferfish
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.correlated._release import CorrelatedRelease, release_sequence
from ppdp.correlated._spec import pufferfish_guarantee
from ppdp.correlated.markov import MarkovChainClass
from ppdp.correlated.mqm import _check_theta
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.mechanisms.grid import as_query_value
from ppdp.random import RandomState

__all__ = ["WassersteinMechanism", "w_infinity"]

#: Largest number of traces k^T enumerated.
MAX_TRACES = 2**12


def w_infinity(mu: dict[float, Fraction], nu: dict[float, Fraction]) -> float:
    """``W_∞`` of two discrete laws on the line: ``sup_u |F⁻¹_μ(u) − F⁻¹_ν(u)|``.

    ``mu`` and ``nu`` map support points to exact (unnormalised) probabilities. Both
    quantile functions are constant between consecutive values of the two CDFs, which are
    compared exactly (rational arithmetic), so no interval exists only by rounding.
    """
    xs, ys = sorted(mu), sorted(nu)
    tx, ty = sum(mu.values()), sum(nu.values())
    cx = list(itertools.accumulate(mu[x] / tx for x in xs))
    cy = list(itertools.accumulate(nu[y] / ty for y in ys))
    cuts = sorted({Fraction(0), *cx, *cy})
    worst = 0.0
    for lo, hi in itertools.pairwise(cuts):
        u = (lo + hi) / 2
        qx = xs[min(bisect.bisect_left(cx, u), len(xs) - 1)]
        qy = ys[min(bisect.bisect_left(cy, u), len(ys) - 1)]
        worst = max(worst, abs(qx - qy))
    return worst


@dataclass(frozen=True, eq=False)
class WassersteinMechanism:
    """``F(X) + Lap(W/ε)`` with ``W`` the worst ∞-Wasserstein distance between secrets.

    ``W = max over θ ∈ Θ, nodes i and states a ≠ b (both of positive probability) of
    W_∞(law of F(X) | X_i = a, θ ; law of F(X) | X_i = b, θ)``, computed exactly by
    enumerating all ``k^T ≤ 4,096`` traces in exact rational arithmetic, so only small
    chains are handled. Every θ needs a declared initial law (an unconstrained one is not
    enumerable).

    Guarantee: ε-Pufferfish privacy in the chain framework of ``theta`` (secret pairs
    ``(X_i = a, X_i = b)``), valid only if the true chain is in Θ. No sensitivity assumption:
    ``W`` is computed from the query itself (a scalar query of the state indices).

    Parameters
    ----------
    epsilon : float
    theta : MarkovChainClass
        With an initial law for every matrix.
    query : callable
        Maps the state indices (int array of length T) to one real number.
    allow_large_epsilon : bool, default False

    References
    ----------
    S. Song, Y. Wang, K. Chaudhuri, "Pufferfish privacy mechanisms for correlated data",
    SIGMOD 2017, Section 4 (the Wasserstein mechanism).
    """

    epsilon: float
    theta: MarkovChainClass
    query: Callable[[NDArray[np.int64]], Any] = field(kw_only=True)
    allow_large_epsilon: bool = field(default=False, kw_only=True)
    _w: dict[int, float] = field(init=False, repr=False, default_factory=dict)

    name = "Wasserstein"

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "epsilon",
            check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon),
        )
        _check_theta(self.theta)
        if any(q is None for q in self.theta.initial_laws):
            raise ParameterError(
                "theta needs a declared initial law for every matrix for the Wasserstein "
                "mechanism (the law of F is enumerated)"
            )
        if not callable(self.query):
            raise ParameterTypeError(f"query ({self.query!r}) must be a callable")

    def privacy_events(self) -> tuple[Pufferfish, ...]:
        """The accounting event of one release: ε-Pufferfish (only a basic ledger takes it)."""
        return (Pufferfish(epsilon=self.epsilon, mechanism=self.name),)

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs."""
        return PrivacyBudget(self.epsilon)

    def wasserstein(self, T: int) -> float:
        """``W`` for chains of length ``T`` (cached)."""
        T = check_int("T", T, minimum=1)
        if T in self._w:
            return self._w[T]
        k = self.theta.k
        if k**T > MAX_TRACES:
            raise ParameterError(
                f"T ({T}) is too long for the Wasserstein mechanism: k^T = {k}^{T} traces exceed "
                f"{MAX_TRACES:,}; use MarkovQuiltMechanism"
            )
        seqs = np.array(list(itertools.product(range(k), repeat=T)), dtype=np.int64)
        vals = []
        for row in seqs:
            v, scalar = as_query_value(self.query(row), name="query(sequence)")
            if not scalar and v.size != 1:
                raise ParameterError("the Wasserstein mechanism needs a scalar query")
            vals.append(float(v.reshape(-1)[0]))
        worst = 0.0
        for P, q0 in zip(self.theta.matrices, self.theta.initial_laws, strict=True):
            assert q0 is not None
            fp = [[Fraction(float(x)) for x in r] for r in P]
            fq = [Fraction(float(x)) for x in q0]
            probs = []
            for row in seqs:
                pr = fq[row[0]]
                for j in range(1, T):
                    pr *= fp[row[j - 1]][row[j]]
                probs.append(pr)
            for i in range(T):
                laws: list[dict[float, Fraction]] = [{} for _ in range(k)]
                for row, pr, v in zip(seqs, probs, vals, strict=True):
                    if pr > 0:
                        law = laws[row[i]]
                        law[v] = law.get(v, Fraction(0)) + pr
                for a, b in itertools.combinations(range(k), 2):
                    if laws[a] and laws[b]:
                        worst = max(worst, w_infinity(laws[a], laws[b]))
        self._w[T] = worst
        return worst

    def sigma_max(self, T: int) -> float:
        """``1/ε`` (the scale is ``W·σ``; W plays the role of L)."""
        check_int("T", T, minimum=1)
        return 1.0 / self.epsilon

    def noise_scale(self, T: int) -> float:
        """``W/ε``."""
        return self.wasserstein(T) / self.epsilon

    def guarantee(self, details: dict[str, Any] | None = None) -> Guarantee:
        """ε-Pufferfish in the chain framework of ``theta``."""
        return pufferfish_guarantee(
            self.epsilon,
            self.theta.spec(),
            mechanism=self.name,
            extra=("W computed exactly by enumerating every trace of every θ",),
            details=details,
        )

    def release(
        self,
        sequence: Any,
        *,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
        allow_seeded: bool = False,
    ) -> CorrelatedRelease:
        """Release ``query(sequence) + Lap(W/ε)`` (same flow and errors as MQM)."""
        T = len(sequence) if hasattr(sequence, "__len__") else 0
        w = self.wasserstein(T) if T >= 1 else 1.0
        if w <= 0:
            raise ParameterError(
                "W is 0: the query does not depend on any secret; release it as is"
            )
        return release_sequence(
            name=self.name,
            epsilon=self.epsilon,
            sigma_of=self.sigma_max,
            encode=self.theta.encode,
            k=self.theta.k,
            lipschitz=w,
            guarantee_of=lambda facts: self.guarantee(details=facts),
            facts_of=lambda T: {"method": "wasserstein", "W": w},
            sequence=sequence,
            query=self.query,
            random_state=random_state,
            accountant=accountant,
            allow_seeded=allow_seeded,
        )
