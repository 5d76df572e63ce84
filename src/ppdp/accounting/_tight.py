"""Tight composition (PLD, RDP) of ppdp's events, computed with Google's ``dp-accounting``.

ppdp writes only what ``dp-accounting`` lacks: the conversion of its events (grid-snapped
noise with its stated slack, stated (ε, δ) guarantees) into ``dp-accounting``'s objects.
Every event carries its sensitivity under the ledger's neighbouring relation already, so
the libraries' own relation (which only matters for subsampling, which ppdp does not use)
is left at its default, and each additive mechanism enters as its *noise multiplier*
(noise scale / effective sensitivity, rounded down): exactly what
``PLDAccountant`` / ``RdpAccountant`` do with a ``GaussianDpEvent`` or ``LaplaceDpEvent``.
See ``docs/proofs/composition.md``.
"""

from __future__ import annotations

import copy
import decimal
import functools
import math
from typing import Any

from ppdp.accounting._dlaplace_pld import rounded_pmf
from ppdp.accounting.events import (
    ZCDP,
    DiscreteLaplace,
    Exponential,
    Gaussian,
    Laplace,
    Parallel,
    PrivacyEvent,
)
from ppdp.exceptions import OptionalDependencyError, UnsupportedEventError

__all__ = ["DISCRETIZATION", "Composer", "make_composer"]

#: PLD discretization of the privacy loss (``PLDAccountant``'s default).
DISCRETIZATION = 1e-4


def _import() -> Any:
    try:
        import dp_accounting
    except ImportError:
        raise OptionalDependencyError(
            "composition 'pld' and 'rdp' need the dp-accounting package: pip install 'ppdp[tight]'"
        ) from None
    return dp_accounting


def _units(event: PrivacyEvent, composition: str) -> list[PrivacyEvent]:
    """The events to compose, in order (a uniform parallel event is its part)."""
    event.require(composition)
    out: list[PrivacyEvent] = []
    for leaf in event.leaves():
        if isinstance(leaf, Parallel) and leaf.uniform:
            out.extend(_units(leaf.events[0], composition))
        elif isinstance(leaf, Parallel):
            env = leaf.envelope()
            assert env is not None  # require() checked it
            out.append(env)
        elif isinstance(leaf, ZCDP) and leaf.events:
            # The draws themselves: each one's PLD (or RDP curve) is at least as tight as
            # anything ρ alone gives, and their ρ sum to at most the event's.
            out.extend(leaf.events)
        else:
            out.append(leaf)
    return out


class Composer:
    """A running tight composition: fold events in, ask for ε at the target δ.

    Parameters
    ----------
    composition : {"pld", "rdp"}
    delta : float
        The target δ (> 0) at which ε is reported.
    """

    def __init__(self, composition: str, delta: float) -> None:
        self.composition = composition
        self.delta = delta
        self.count = 0
        # Basic composition's sums, kept beside: also a valid bound (see _combine).
        self._basic: tuple[decimal.Decimal, decimal.Decimal] | None = (_ZERO, _ZERO)
        self._dp = _import()
        if composition == "pld":
            self._state: Any = self._dp.pld.privacy_loss_distribution.identity(
                value_discretization_interval=DISCRETIZATION
            )
        elif composition == "rdp":
            self._state = self._dp.rdp.RdpAccountant()
        else:  # pragma: no cover - the callers validate the name
            raise UnsupportedEventError(f"composition ({composition!r}) is not a tight one")

    # -- conversion -------------------------------------------------------------------------

    def _pld_of(self, leaf: PrivacyEvent) -> Any:
        return _cached_pld(leaf)

    def _dp_event_of(self, leaf: PrivacyEvent) -> Any:
        dp_event = self._dp.dp_event
        if isinstance(leaf, Gaussian):
            return dp_event.GaussianDpEvent(leaf.noise_multiplier)
        if isinstance(leaf, Laplace):
            return dp_event.LaplaceDpEvent(leaf.noise_multiplier)
        if isinstance(leaf, ZCDP):  # ρ-zCDP is RDP α·ρ at every order α
            return dp_event.ZCDpEvent(leaf.rho)
        b = leaf.budget()
        if b.delta != 0.0:  # pragma: no cover - require() refused it already
            raise UnsupportedEventError(f"event {leaf.describe()} is not pure under 'rdp'")
        if isinstance(leaf, DiscreteLaplace):
            # RdpAccountant (0.6.0) has no DiscreteLaplaceDpEvent; the discrete Laplace is
            # ε-DP, hence (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4), as below.
            return dp_event.ZCDpEvent(b.epsilon**2 / 2.0)
        if isinstance(leaf, Exponential):
            # The exponential mechanism is ε-bounded-range (Durfee & Rogers 2019), hence
            # (ε²/8)-zCDP (Cesar & Rogers 2021, Lemma 3.2): a quarter of the generic bound.
            return dp_event.ZCDpEvent(b.epsilon**2 / 8.0)
        # ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4).
        return dp_event.ZCDpEvent(b.epsilon**2 / 2.0)

    def _with(self, state: Any, event: PrivacyEvent) -> Any:
        for leaf in _units(event, self.composition):
            if self.composition == "pld":
                state = state.compose(self._pld_of(leaf))
            else:
                state.compose(self._dp_event_of(leaf))
        return state

    # -- public -----------------------------------------------------------------------------

    def check(self, event: PrivacyEvent) -> None:
        """Raise :class:`UnsupportedEventError` unless this composition can take ``event``."""
        _units(event, self.composition)

    def add(self, event: PrivacyEvent) -> None:
        """Fold ``event`` into the running composition."""
        self._state = self._with(self._state, event)
        self._basic = _plus(self._basic, _basic_of(event))
        self.count += 1

    def epsilon(self) -> float:
        """The composed ε at the target δ (0 before any event)."""
        if self.count == 0:
            return 0.0
        return self._combine(self._epsilon(self._state), self._basic)

    def tight_epsilon(self) -> float:
        """The library's composed ε at the target δ alone (no basic bound beside it)."""
        return 0.0 if self.count == 0 else self._epsilon(self._state)

    def epsilon_with(self, event: PrivacyEvent) -> float:
        """The composed ε at the target δ if ``event`` were added (nothing is changed)."""
        base = self._state if self.composition == "pld" else copy.deepcopy(self._state)
        tight = self._epsilon(self._with(base, event))
        return self._combine(tight, _plus(self._basic, _basic_of(event)))

    def _combine(
        self, tight: float, basic: tuple[decimal.Decimal, decimal.Decimal] | None
    ) -> float:
        """``min(tight ε, Σε)`` when every event has a basic (ε, δ) and ``Σδ <= δ_target``.

        Both are valid bounds on the same composed mechanism: if the events are (ε_i, δ_i)-DP
        with Σδ_i ≤ δ, the whole is (Σε_i, δ)-DP (basic composition). So a tight ledger never
        admits fewer releases than a basic one would (RDP's ε²/2 conversion of a pure ε is
        loose for few releases).
        """
        if basic is None or basic[1] > _dec(self.delta):
            return tight
        return min(tight, _float_up(basic[0]))

    def epsilon_alone(self, event: PrivacyEvent) -> float:
        """ε at the target δ of ``event`` by itself."""
        return Composer(self.composition, self.delta).epsilon_with(event)

    def _epsilon(self, state: Any) -> float:
        if self.composition == "pld":
            eps = float(state.get_epsilon_for_delta(self.delta))
        else:
            eps = float(state.get_epsilon(self.delta))
        return eps if math.isfinite(eps) else math.inf


def count_fitting(composer: Composer, event: PrivacyEvent, limit_eps: float, *, limit: int) -> int:
    """How many more copies of ``event`` fit under ``limit_eps`` (monotone: bisection)."""

    one = _basic_of(event)

    def fits(k: int) -> bool:
        if k == 0:
            return True
        basic = None if one is None else (_CTX.multiply(one[0], k), _CTX.multiply(one[1], k))
        if composer.composition == "pld":
            state = composer._state
            for leaf in _units(event, "pld"):
                state = state.compose(_cached_pld(leaf).self_compose(k))
        else:
            state = copy.deepcopy(composer._state)
            dp_event = composer._dp.dp_event
            for leaf in _units(event, "rdp"):
                state.compose(dp_event.SelfComposedDpEvent(composer._dp_event_of(leaf), k))
        eps = composer._combine(composer._epsilon(state), _plus(composer._basic, basic))
        return eps <= limit_eps

    lo, hi = 0, 1
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:  # fits(lo), not fits(hi) (or hi beyond the limit)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


_ZERO = decimal.Decimal(0)
_CTX = decimal.Context(prec=1000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _dec(x: float) -> decimal.Decimal:
    return decimal.Decimal(repr(float(x)))


def _basic_of(event: PrivacyEvent) -> tuple[decimal.Decimal, decimal.Decimal] | None:
    try:
        b = event.budget()
    except UnsupportedEventError:
        return None
    return _dec(b.epsilon), _dec(b.delta)


def _plus(
    a: tuple[decimal.Decimal, decimal.Decimal] | None,
    b: tuple[decimal.Decimal, decimal.Decimal] | None,
) -> tuple[decimal.Decimal, decimal.Decimal] | None:
    if a is None or b is None:
        return None
    return _CTX.add(a[0], b[0]), _CTX.add(a[1], b[1])


def _float_up(d: decimal.Decimal) -> float:
    """The smallest float whose shortest repr is ``>= d``."""
    x = float(d)
    while _dec(x) < d:
        x = math.nextafter(x, math.inf)
    return x


@functools.lru_cache(maxsize=64)
def _cached_pld(leaf: PrivacyEvent) -> Any:
    """The PLD of one event (building a Gaussian's takes ~0.15 s; composing, ~0.02 s;
    a discrete Laplace at Δ = 2²⁴, ε = 0.5, ~0.01 s)."""
    dp = _import()
    pld = dp.pld.privacy_loss_distribution
    if isinstance(leaf, Gaussian):
        return pld.from_gaussian_mechanism(
            standard_deviation=leaf.noise_multiplier, value_discretization_interval=DISCRETIZATION
        )
    if isinstance(leaf, Laplace):
        return pld.from_laplace_mechanism(
            parameter=leaf.noise_multiplier, value_discretization_interval=DISCRETIZATION
        )
    if isinstance(leaf, DiscreteLaplace) and leaf.exact_pld:
        # The pair shifted by exactly Δ is the worst one (docs/proofs/discrete-laplace.md §3);
        # the parameter is 1/b rounded up, the conservative direction. The library's own
        # from_discrete_laplace_mechanism, grouped: O(ε/h) points and work, not O(Δ) (§3).
        pmf = rounded_pmf(leaf.noise_parameter, leaf.l1_sensitivity, DISCRETIZATION)
        return pld.PrivacyLossDistribution.create_from_rounded_probability(pmf, 0.0, DISCRETIZATION)
    # A stated (ε, δ) (a ZCDP event without draws included): the worst (ε, δ)-DP mechanism
    # dominates it.
    b = leaf.budget()
    params = dp.pld.common.DifferentialPrivacyParameters(b.epsilon, b.delta)
    return pld.from_privacy_parameters(params, value_discretization_interval=DISCRETIZATION)


def make_composer(composition: str, delta: float) -> Composer:
    """A fresh :class:`Composer` (raises a one-line install hint without dp-accounting)."""
    return Composer(composition, delta)
