"""Private partition selection: which group keys nobody declared may be released.

A key read from the data (a diagnosis code, a postcode) reveals that someone has it. A key
is released only when a noisy count of its contributors passes a threshold calibrated so
that a key held by one person (or by a few, each contributing at most ``max_rows_per_group``
rows) is released with probability at most δ. Three methods, all of them one pass over
the exact per-key counts:

- ``"laplace"``: discrete Laplace noise on every key's count, released when the noisy
  count is at least the threshold τ; the noisy count is the released count (no second
  spend). Any number of keys per person (``max_groups``).
- ``"gaussian"``: the same with Gaussian noise calibrated to the L2 sensitivity
  ``√(max_groups)·max_rows_per_group``: the method for many groups per person, whose noise
  grows with the square root of the cap instead of the cap.
- ``"truncated-geometric"``: the optimal keep-probability of a key with ``n`` persons
  (Desfontaines, Voss, Gipson, Mandayam 2022) for one group per person; it releases keys
  only, so the counts are drawn afterwards with their own share of ε.
- ``"dp-sips"``: for many keys per person (Swanberg, Desfontaines, Haney 2023). In each of
  a few rounds every person spreads a weight of L2 norm 1 evenly over their keys not yet
  selected (``1/√r`` on each of ``r`` keys), and a key is selected when its summed weight
  plus Gaussian noise passes the round's threshold; the rounds' noise shrinks as they go
  (their precisions are shares of one Gaussian mechanism's). Persons whose keys are found
  early put all their weight on the rest later. Keys only, like truncated geometric.

The argument, with the exact thresholds and δ, is in ``docs/proofs/partition-selection.md``.
``max_groups`` (the L0 cap: keys per person) and ``max_rows_per_group`` (the L∞ cap: rows of
one person in one key) are 1 where rows are persons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri

from ppdp import noise
from ppdp.budget import Neighbouring
from ppdp.exceptions import ParameterError
from ppdp.mechanisms import DiscreteLaplaceMechanism, GaussianMechanism
from ppdp.mechanisms.grid import snap_and_add_noise
from ppdp.random import RandomSource

__all__ = ["METHODS", "PartitionSelection", "keep_probabilities"]

#: The selection methods, in the order ``--selection`` lists them.
METHODS = ("laplace", "gaussian", "truncated-geometric", "dp-sips")
#: DP-SIPS: the share of the Gaussian precision ``1/σ²`` of each round, the later rounds
#: (which see the persons' weight moved onto their rarer keys) with more.
SIPS_SHARES = (0.3, 0.7)


def keep_probabilities(epsilon: float, delta: float) -> NDArray[np.float64]:
    """``π(0), π(1), …, π(n*) = 1``: the largest keep-probabilities of a key with ``n``
    persons that are (ε, δ)-DP under add/remove of one person with one key.

    ``π(0) = 0`` and ``π(n) = min(e^ε π(n−1) + δ, 1 − e^(−ε)(1 − π(n−1) − δ), 1)``: the two
    DP inequalities between ``n − 1`` and ``n`` persons, each tight (Desfontaines et al.
    2022, Theorem 1); the last entry is 1 and holds for every larger ``n``.
    """
    out = [0.0]
    e = math.exp(epsilon)
    while out[-1] < 1.0 and len(out) < 10**7:
        p = out[-1]
        out.append(min(e * p + delta, 1.0 - (1.0 - p - delta) / e, 1.0))
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class PartitionSelection:
    """One private selection of keys, from its public parameters alone.

    Parameters
    ----------
    method : {"laplace", "gaussian", "truncated-geometric", "dp-sips"}
    epsilon : float
        ε of the selection (for ``"laplace"`` and ``"gaussian"`` also of the released
        counts, which are the selection's noisy counts).
    shares : tuple of float, default :data:`SIPS_SHARES`
        ``"dp-sips"`` only: each round's share of the noise precision (positive, sum 1).
    delta : float
        δ > 0: at most the probability that a key whose contributors are one person (a
        neighbour's extra person) is released.
    relation : Neighbouring
        ``replace-one`` (a person's rows replaced by another's, keys may change) or
        ``add/remove``.
    max_groups : int, default 1
        L0 cap: the most keys one person contributes to (1 where rows are persons).
    max_rows_per_group : int, default 1
        L∞ cap: the most rows one person contributes to one key.
    threshold : float, optional
        A threshold above the least one that meets δ (a stricter selection); a lower one
        is refused in one line naming the least.
    max_contribution : int, optional
        The most rows of one person over all keys (a privacy unit's ``max_rows``); default
        ``max_groups · max_rows_per_group``. It tightens the sensitivities only.
    """

    method: str
    epsilon: float
    delta: float
    relation: Neighbouring
    max_groups: int = 1
    max_rows_per_group: int = 1
    threshold: float | None = None
    max_contribution: int | None = None
    shares: tuple[float, ...] = SIPS_SHARES
    _tau: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(
                f"selection ({self.method!r}) must be one of {', '.join(map(repr, METHODS))}"
            )
        for name in ("max_groups", "max_rows_per_group", "max_contribution"):
            v = getattr(self, name)
            if name == "max_contribution" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ParameterError(f"{name} ({v!r}) must be an integer >= 1")
        if self.method == "truncated-geometric" and (
            self.max_groups != 1 or self.max_rows_per_group != 1
        ):
            raise ParameterError(
                f"max_groups ({self.max_groups!r}): selection 'truncated-geometric' is for one "
                "group (and one row) per person; use selection 'gaussian' for several"
            )
        if not 0.0 < self.delta < 1.0:
            raise ParameterError(f"delta ({self.delta!r}) must be in (0, 1)")
        sh = self.shares
        if (
            not isinstance(sh, tuple)
            or not sh
            or not all(isinstance(w, float) and w > 0 for w in sh)
            or abs(sum(sh) - 1.0) > 1e-12
        ):
            raise ParameterError(f"shares ({sh!r}) must be positive floats summing to 1")
        least = self._least_threshold()
        tau = least
        if self.threshold is not None and self.method in ("truncated-geometric", "dp-sips"):
            raise ParameterError(
                f"threshold ({self.threshold!r}) applies to selection 'laplace' or 'gaussian' "
                "only; leave it unset"
            )
        if self.threshold is not None:
            t = self.threshold
            if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
                raise ParameterError(f"threshold ({t!r}) must be a finite number")
            if t < least:
                raise ParameterError(
                    f"threshold ({t!r}) is below {least:.6g}, the least that keeps the chance "
                    f"of releasing a key of one person below delta ({self.delta:g}) with "
                    f"selection {self.method!r}; use threshold >= {least:.6g} or leave it unset"
                )
            tau = float(t)
        object.__setattr__(self, "_tau", tau)

    # -- public quantities ----------------------------------------------------------------

    @property
    def _moves(self) -> int:
        """2 under replace-one (a person's rows leave some keys and join others), else 1."""
        return 2 if self.relation is Neighbouring.REPLACE_ONE else 1

    @property
    def _rows(self) -> int:
        """The most rows of one person over all keys: ``min(L0 · L∞, max_contribution)``."""
        full = self.max_groups * self.max_rows_per_group
        return full if self.max_contribution is None else min(full, self.max_contribution)

    @property
    def count_sensitivity_l1(self) -> int:
        """L1 change of the count vector between neighbours: ``moves · min(L0 · L∞, C)``
        (``C`` the person's rows in all, ``max_contribution``)."""
        return self._moves * self._rows

    @property
    def count_sensitivity_l2(self) -> float:
        """L2 change of the count vector: ``√(moves · min(L0, C / L∞)) · L∞`` (a person's
        squared changes sum to at most ``L∞ · min(L0 · L∞, C)``)."""
        keys = min(float(self.max_groups), self._rows / self.max_rows_per_group)
        return math.sqrt(self._moves * keys) * self.max_rows_per_group

    def laplace(self) -> DiscreteLaplaceMechanism:
        """The counts' discrete Laplace mechanism (``"laplace"``)."""
        return DiscreteLaplaceMechanism(
            epsilon=self.epsilon,
            sensitivity=self.count_sensitivity_l1,
            relation=self.relation,
            allow_large_epsilon=True,
        )

    def gaussian(self) -> GaussianMechanism:
        """The counts' Gaussian mechanism (``"gaussian"``), at δ/2."""
        return GaussianMechanism(
            epsilon=self.epsilon,
            delta=self.delta / 2.0,
            sensitivity=self.count_sensitivity_l2,
            relation=self.relation,
            allow_large_epsilon=True,
        )

    def sips(self) -> GaussianMechanism:
        """DP-SIPS: the one Gaussian mechanism (at ``(ε, δ/2)``, L2 sensitivity ``√moves``:
        a person's weight vector has norm at most 1) whose precision the rounds share.
        ``dimension`` counts the keys whose weight one neighbour changes (for the grid)."""
        return GaussianMechanism(
            epsilon=self.epsilon,
            delta=self.delta / 2.0,
            sensitivity=math.sqrt(self._moves),
            dimension=self._moves * self.max_groups,
            relation=self.relation,
            allow_large_epsilon=True,
        )

    def sips_sigmas(self) -> tuple[float, ...]:
        """Each round's noise σ_i = σ / √w_i (σ the mechanism's, w_i its share)."""
        sigma = self.sips().sigma
        return tuple(sigma / math.sqrt(w) for w in self.shares)

    def sips_thresholds(self) -> tuple[float, ...]:
        """Each round's threshold τ_i: a person alone with ``r ≤ m`` remaining keys gives
        each ``1/√r``, and ``max_r r·P(N(0, σ_i²) ≥ τ_i − 1/√r − Λ) = β``, with
        ``β = δ / (2 · rounds · (1 + e^ε))`` (Λ the grid: snapping and rounding move a
        noisy weight by at most Λ). See docs/proofs/partition-selection.md, DP-SIPS."""
        lam = self.sips()._granularity
        beta = self.delta / (2.0 * len(self.shares) * (1.0 + math.exp(self.epsilon)))
        r = np.arange(1, self.max_groups + 1, dtype=np.float64)
        z = ndtri(1.0 - beta / r)
        return tuple(float(np.max(1.0 / np.sqrt(r) + lam + s * z)) for s in self.sips_sigmas())

    def select_persons(
        self,
        persons: NDArray[np.int64],
        keys: NDArray[np.int64],
        n_keys: int,
        source: RandomSource,
        singles: NDArray[np.int64] | None = None,
    ) -> NDArray[np.bool_]:
        """DP-SIPS: which of ``n_keys`` candidate keys are released, from the (person, key)
        pairs of the rows (each pair counted once; ``keys`` in ``[0, n_keys)``) and, per
        key, ``singles``: the persons known to hold that key alone (rows without a privacy
        unit: each row is a person of one key), weight 1 in every round, added last as an
        exact count (their pairs need not exist)."""
        if self.method != "dp-sips":
            raise ParameterError("select_persons is for selection 'dp-sips'")
        key, person = _unique_pairs(np.asarray(keys, np.int64), np.asarray(persons, np.int64))
        alone = np.zeros(n_keys, np.float64) if singles is None else np.asarray(singles, np.float64)
        mech = self.sips()
        chosen = np.zeros(n_keys, dtype=bool)
        for w, tau in zip(self.shares, self.sips_thresholds(), strict=True):
            live = ~chosen[key]
            k, p = key[live], person[live]
            held = np.bincount(p, minlength=int(person.max(initial=-1)) + 1)[p]
            weight = 1.0 / np.sqrt(held)
            # Sorted by (key, weight): each key's sum adds equal terms in a fixed order, so
            # the float sum does not depend on the rows' order.
            order = np.lexsort((weight, k))
            total = np.bincount(k[order], weights=weight[order], minlength=n_keys) + alone
            open_keys = np.flatnonzero(~chosen)
            sigma = mech.sigma * (1.0 / math.sqrt(w))  # round i's σ_i (sips_sigmas)
            noisy = snap_and_add_noise(
                total[open_keys],
                granularity=mech.granularity,
                scale=sigma,
                source=source,
                law="gaussian",
            )
            chosen[open_keys[noisy >= tau]] = True
        return chosen

    @property
    def threshold_(self) -> float:
        """τ: a key outside the declared ones is released when its noisy count is ≥ τ."""
        return self._tau

    def _least_threshold(self) -> float:
        m, c = self.max_groups, self.max_rows_per_group
        if self.method == "laplace":
            q = math.exp(-1.0 / self.laplace().scale)
            if self.delta > 1.0 - q:
                raise ParameterError(
                    f"delta ({self.delta!r}) must be below 1 - e^(-1/b) = {1.0 - q:.3g} for "
                    "laplace selection at this epsilon (b the count noise scale)"
                )
            # P(Z >= t) = q^t / (1 + q) for an integer t >= 1; m new keys, each of <= c rows.
            t = max(1, math.ceil(math.log(self.delta * (1.0 + q) / m) / math.log(q)))
            while m * q**t / (1.0 + q) > self.delta:
                t += 1
            return float(c + t)
        if self.method == "gaussian":
            mech = self.gaussian()
            # δ/2 for the noise, δ_t (1 + e^ε) for the keys new on either side: δ in all.
            per_key = self.delta / (2.0 * (1.0 + math.exp(self.epsilon)) * m)
            # + Λ: the noise's grid (snapping and rounding) moves a noisy count by at most Λ.
            return c + mech._granularity + mech.sigma * float(ndtri(1.0 - per_key))
        if self.method == "dp-sips":
            return self.sips_thresholds()[-1]
        return 1.0  # truncated geometric: keep-probabilities, no threshold on a count

    def keep_probabilities(self) -> NDArray[np.float64]:
        """``π(n)`` of ``"truncated-geometric"`` (under replace-one at ε/2 and
        δ/(1 + e^(ε/2)): a replacement is a removal then an addition)."""
        if self.relation is Neighbouring.REPLACE_ONE:
            eps = self.epsilon / 2.0
            return keep_probabilities(eps, self.delta / (1.0 + math.exp(eps)))
        return keep_probabilities(self.epsilon, self.delta)

    def details(self) -> dict[str, Any]:
        """What the ledger and the guarantee say of the selection (public)."""
        d: dict[str, Any] = {
            "selection": self.method,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "max_groups": self.max_groups,
            "max_rows_per_group": self.max_rows_per_group,
        }
        if self.max_contribution is not None:
            d["max_contribution"] = self.max_contribution
        if self.method == "laplace":
            d["threshold"] = self._tau
            d["count_noise_scale"] = self.laplace().scale
        elif self.method == "gaussian":
            d["threshold"] = self._tau
            d["count_noise_sigma"] = self.gaussian().sigma
        elif self.method == "dp-sips":
            d["rounds"] = len(self.shares)
            d["round_precision_shares"] = list(self.shares)
            d["round_thresholds"] = list(self.sips_thresholds())
            d["round_noise_sigmas"] = list(self.sips_sigmas())
        else:
            d["keep_probability_reaches_1_at_persons"] = len(self.keep_probabilities()) - 1
        return d

    # -- the release ----------------------------------------------------------------------

    def noisy_counts(self, counts: NDArray[np.int64], source: RandomSource) -> NDArray[np.float64]:
        """The noisy counts (``"laplace"``: integers; ``"gaussian"``: on the mechanism's
        grid) of ``counts``."""
        flat = np.asarray(counts, dtype=np.int64).reshape(-1)
        if self.method == "laplace":
            mech = self.laplace()
            return mech._release(flat, source, scale=mech.scale).astype(np.float64)
        if self.method == "gaussian":
            g = self.gaussian()
            return g._release(flat.astype(np.float64), source)
        raise ParameterError("noisy_counts is for the thresholding methods")

    def select(
        self,
        counts: NDArray[np.int64],
        source: RandomSource,
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64] | None]:
        """Which candidate keys (exact counts ``counts``, each ≥ 1) are released, and for the
        thresholding methods their noisy counts (None for ``"truncated-geometric"``)."""
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        if self.method == "truncated-geometric":
            pi = self.keep_probabilities()
            u = np.asarray(noise.uniform(counts.size, random_state=source), dtype=np.float64)
            keep = u < pi[np.minimum(counts, len(pi) - 1)]
            return keep.reshape(-1), None
        noisy = self.noisy_counts(counts, source)
        return noisy >= self._tau, noisy


def _unique_pairs(
    keys: NDArray[np.int64], persons: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The distinct (key, person) pairs, sorted by key then person."""
    if not len(keys):
        return keys, persons
    span = int(persons.max()) + 1
    if int(keys.max()) < 2**62 // span:  # one int64 code per pair: a fast 1-d unique
        code = np.unique(keys * span + persons)
        return code // span, code % span
    pairs = np.unique(np.stack([keys, persons]), axis=1)
    return pairs[0], pairs[1]
