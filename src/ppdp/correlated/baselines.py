"""Baselines for correlated data with the interface of MQM: group DP and GK16.

Privacy notes: ``docs/proofs/pufferfish-mqm.md`` (section "Baselines").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import solve_banded

from ppdp._validation import check_epsilon, check_int, check_positive
from ppdp.accounting import Accountant
from ppdp.accounting.events import EpsilonDelta, Pufferfish
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.correlated._release import CorrelatedRelease, Query, release_sequence
from ppdp.correlated._spec import pufferfish_guarantee
from ppdp.correlated.markov import MarkovChainClass
from ppdp.correlated.mqm import _check_theta
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.random import RandomState

__all__ = ["GK16Mechanism", "GroupDPMechanism"]


def _encode_any(k: int | None):
    def encode(sequence: Any) -> np.ndarray:
        if k is None:
            raise AssertionError("unreachable")
        arr = np.asarray(sequence)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise DataValidationError("sequence must be a 1-D array of state indices")
        bad = int(np.count_nonzero((arr < 0) | (arr >= k)))
        if bad:
            raise DataValidationError(
                f"sequence has {bad} of {arr.size} entries outside the {k} declared states"
            )
        return arr.astype(np.int64)

    return encode


@dataclass(frozen=True, eq=False)
class GroupDPMechanism:
    """Group DP with the whole chain as one group: ``F(X) + Lap(L·T/ε)``.

    Guarantee: ε-differential privacy for the group of all ``T`` nodes (any change of the
    whole trace), which implies ε-Pufferfish for every Θ (it is MQM with only the trivial
    quilt). Sensitivity assumption: the query is ``L``-Lipschitz in L1 per changed node, so
    the whole trace moves it by at most ``L·T`` (histogram: ``L = 2/T``, i.e. 2 in total).

    Parameters
    ----------
    epsilon : float
    lipschitz : float, default 1.0
    theta : MarkovChainClass, optional
        Only used to validate and encode a trace's states in :meth:`release`; without it the
        trace must hold state indices and ``states`` must be passed.
    states : int, optional
        Number of states when no ``theta`` is given.
    allow_large_epsilon : bool, default False

    References
    ----------
    C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014 (group privacy).

    Examples
    --------
    >>> GroupDPMechanism(1.0).noise_scale(100)
    100.0
    """

    epsilon: float
    lipschitz: float = field(default=1.0, kw_only=True)
    theta: MarkovChainClass | None = field(default=None, kw_only=True)
    states: int | None = field(default=None, kw_only=True)
    allow_large_epsilon: bool = field(default=False, kw_only=True)

    name = "GroupDP"

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "epsilon",
            check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon),
        )
        object.__setattr__(self, "lipschitz", check_positive("lipschitz", self.lipschitz))
        if self.theta is not None:
            _check_theta(self.theta)
        if self.states is not None:
            object.__setattr__(self, "states", check_int("states", self.states, minimum=2))

    def privacy_events(self) -> tuple[EpsilonDelta, ...]:
        """The accounting event of one release: ε-DP for the trace as one group."""
        return (EpsilonDelta(epsilon=self.epsilon),)

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs."""
        return PrivacyBudget(self.epsilon)

    def sigma_max(self, T: int) -> float:
        """``T/ε`` (the trivial quilt)."""
        return check_int("T", T, minimum=1) / self.epsilon

    def noise_scale(self, T: int) -> float:
        """``L·T/ε``."""
        return self.lipschitz * self.sigma_max(T)

    def guarantee(self, details: dict[str, Any] | None = None) -> Guarantee:
        """ε-DP for the whole trace as one group."""
        return Guarantee.pure(
            self.epsilon,
            relation="replace-one",
            mechanism=self.name,
            assumptions=(
                "the whole trace is one group: any change of all T values is protected",
                "the query is L-Lipschitz in L1 per changed node (histogram: L = 2/T)",
            ),
            details=details,
        )

    def release(
        self,
        sequence: Any,
        query: str | Query = "histogram",
        *,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
        allow_seeded: bool = False,
    ) -> CorrelatedRelease:
        """Release with ``Lap(L·T/ε)`` noise per coordinate (same flow as MQM)."""
        if self.theta is not None:
            encode, k = self.theta.encode, self.theta.k
        elif self.states is not None:
            encode, k = _encode_any(self.states), self.states
        else:
            raise ParameterTypeError(
                "GroupDPMechanism.release needs theta= or states= to read a trace"
            )
        return release_sequence(
            name=self.name,
            epsilon=self.epsilon,
            sigma_of=self.sigma_max,
            encode=encode,
            k=k,
            lipschitz=self.lipschitz,
            guarantee_of=lambda facts: self.guarantee(details=facts),
            facts_of=lambda T: {"method": "group", "group_size": T},
            pufferfish=False,  # ε-DP for the trace as one group: it composes
            sequence=sequence,
            query=query,
            random_state=random_state,
            accountant=accountant,
            allow_seeded=allow_seeded,
        )


def gk16_gamma(theta: MarkovChainClass) -> float:
    """γ = ½·max log P(X_i=x | X_{i-1}=u, X_{i+1}=w) / P(X_i=x | X_{i-1}=u', X_{i+1}=w).

    The worst one-step likelihood ratio of a node given its two neighbours, over θ, both
    neighbours (by the symmetric formula for the right one) and all values, as in the
    authors' code for binary chains. ``inf`` if a conditional probability can be 0.
    """
    worst = 0.0
    for P in theta.matrices:
        # c[u, x, w] = P(X_i = x | X_{i-1} = u, X_{i+1} = w) ∝ P[u, x] P[x, w]
        joint = P[:, :, None] * P[None, :, :]
        norm = joint.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = joint / norm
            lc = np.log(c)
            left = lc[:, None, :, :] - lc[None, :, :, :]  # u vs u'
            right = lc[:, :, :, None] - lc[:, :, None, :]  # w vs w'
        ok = norm > 0
        okl = ok[:, None, :, :] & ok[None, :, :, :]
        okr = ok[:, :, :, None] & ok[:, :, None, :]
        vals = np.concatenate(
            [np.where(okl, left, -np.inf).ravel(), np.where(okr, right, -np.inf).ravel()]
        )
        vals = np.where(np.isnan(vals), np.inf, vals)
        worst = max(worst, float(np.max(vals)))
    return 0.5 * worst


@dataclass(frozen=True, eq=False)
class GK16Mechanism:
    """Ghosh–Kleinberg inferential privacy for a chain: Laplace-DP at a reduced ε.

    With the tridiagonal influence matrix ``Γ`` (off-diagonal ``γ`` from
    :func:`gk16_gamma`), GK16 applies when ``‖Γ‖₂ = 2γ·cos(π/(T+1)) < 1`` and then runs the
    Laplace mechanism at ``ε_DP = ε / max_i 2·Σ_j [(I − Γ)^{-1}]_{ij}``, giving
    ε-inferential (Pufferfish-style) privacy for each node's value under Θ.

    :meth:`noise_scale` returns ``inf`` when GK16 is inapplicable (so experiments can mark
    it). :meth:`release` is refused (see its docstring): GK16 is a comparison baseline.

    Parameters
    ----------
    epsilon : float
    theta : MarkovChainClass
    lipschitz : float, default 1.0
    allow_large_epsilon : bool, default False

    Notes
    -----
    The influences of the end nodes are not bounded separately (as in the authors' code);
    with an unconstrained initial law they are not finite. Treat GK16 as the baseline of
    the paper's comparison, not as an independently verified mechanism.

    References
    ----------
    A. Ghosh, R. Kleinberg, "Inferential privacy guarantees for differentially private
    mechanisms", arXiv:1603.01508 (ITCS 2017).
    """

    epsilon: float
    theta: MarkovChainClass
    lipschitz: float = field(default=1.0, kw_only=True)
    allow_large_epsilon: bool = field(default=False, kw_only=True)
    _gamma: float = field(init=False, repr=False)

    name = "GK16"

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "epsilon",
            check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon),
        )
        _check_theta(self.theta)
        object.__setattr__(self, "lipschitz", check_positive("lipschitz", self.lipschitz))
        object.__setattr__(self, "_gamma", gk16_gamma(self.theta))

    @property
    def gamma(self) -> float:
        """γ, the off-diagonal entry of Γ."""
        return self._gamma

    def privacy_events(self) -> tuple[Pufferfish, ...]:
        """The accounting event of one release: ε-Pufferfish (only a basic ledger takes it)."""
        return (Pufferfish(epsilon=self.epsilon, mechanism=self.name),)

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs."""
        return PrivacyBudget(self.epsilon)

    def applicable(self, T: int) -> bool:
        """True iff ``‖Γ‖₂ < 1`` for a chain of length ``T``."""
        T = check_int("T", T, minimum=1)
        if T == 1:
            return True
        return math.isfinite(self._gamma) and 2.0 * self._gamma * math.cos(math.pi / (T + 1)) < 1.0

    def epsilon_dp(self, T: int) -> float:
        """The ε the Laplace mechanism runs at (0.0 when inapplicable)."""
        if not self.applicable(T):
            return 0.0
        if T == 1 or self._gamma == 0:
            return self.epsilon / 2.0
        g = self._gamma
        ab = np.zeros((3, T))
        ab[0, 1:] = -g
        ab[1, :] = 1.0
        ab[2, :-1] = -g
        rows = solve_banded((1, 1), ab, np.ones(T))
        return self.epsilon / float(2.0 * rows.max())

    def sigma_max(self, T: int) -> float:
        """``1/ε_DP`` (``inf`` when inapplicable)."""
        e = self.epsilon_dp(T)
        return math.inf if e == 0 else 1.0 / e

    def noise_scale(self, T: int) -> float:
        """``L/ε_DP`` (``inf`` when inapplicable)."""
        return self.lipschitz * self.sigma_max(T)

    def guarantee(self, details: dict[str, Any] | None = None) -> Guarantee:
        """ε-Pufferfish (inferential privacy) for the node values under Θ."""
        return pufferfish_guarantee(
            self.epsilon,
            self.theta.spec(),
            mechanism=self.name,
            extra=(
                f"GK16 influence bound γ = {self._gamma:.6g} with ‖Γ‖₂ < 1 (end nodes as in "
                "the authors' code)",
            ),
            details=details,
        )

    def release(
        self,
        sequence: Any,
        query: str | Query = "histogram",
        *,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
        allow_seeded: bool = False,
    ) -> CorrelatedRelease:
        """Refused: GK16 is a comparison baseline here (use :meth:`noise_scale`).

        Its influence matrix uses the interior γ for every node, but the influence on the
        end nodes depends on the initial law and can exceed γ when that law is unconstrained
        (e.g. P = [[.6, .4], [.3, .7]]: γ = 0.426, worst end-node influence 0.626). Until the
        end-node entries are derived, the ε-Pufferfish claim is not verified, so ppdp does
        not release with it; nothing is read and nothing is charged.
        """
        raise ParameterError(
            "GK16Mechanism.release is refused: its end-node influence is not bounded by the "
            "interior γ, so its Pufferfish claim is unverified; use MarkovQuiltMechanism to "
            "release, and GK16Mechanism.noise_scale(T) for comparisons"
        )

    def _release_unverified(
        self,
        sequence: Any,
        query: str | Query = "histogram",
        *,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
        allow_seeded: bool = False,
    ) -> CorrelatedRelease:
        """The GK16 release as the authors' code does it (kept for the baseline's tests)."""
        return release_sequence(
            name=self.name,
            epsilon=self.epsilon,
            sigma_of=self.sigma_max,
            encode=self.theta.encode,
            k=self.theta.k,
            lipschitz=self.lipschitz,
            guarantee_of=lambda facts: self.guarantee(details=facts),
            facts_of=lambda T: {
                "method": "gk16",
                "gamma": self._gamma,
                "epsilon_dp": self.epsilon_dp(T),
            },
            sequence=sequence,
            query=query,
            random_state=random_state,
            accountant=accountant,
            allow_seeded=allow_seeded,
        )
