"""Typed privacy events: what a release costs, described from its parameters alone.

An event is a small frozen value object (after ``dp_accounting``'s ``DpEvent``) that
validates on construction, has a canonical JSON form (:meth:`PrivacyEvent.to_dict` /
:func:`event_from_dict`, which the ledger stores) and knows

- its (ε, δ) under *basic* composition (:meth:`PrivacyEvent.budget`), and
- which compositions can account for it more tightly (:attr:`PrivacyEvent.compositions`):
  ``"pld"`` (privacy loss distributions) and ``"rdp"`` (Rényi DP), both computed with
  Google's ``dp-accounting`` (:mod:`ppdp.accounting._tight`).

The additive mechanisms describe what is *actually* released: ppdp's samplers snap the
value to a power-of-two grid Λ, which adds up to ``d·Λ`` (L1) or ``√d·Λ`` (L2) to the
sensitivity, so :class:`Laplace` and :class:`Gaussian` carry the declared sensitivity,
the grid and the dimension, and every tight computation uses the effective sensitivity
``Δ + c·Λ`` rounded up and the noise multiplier ``scale / (Δ + c·Λ)`` rounded down
(``docs/proofs/composition.md``).

**Stability.** Events persist forever in signed ledgers, and a ledger is replayed (and its
totals re-derived) every time it is opened, so the same rule holds here as for
``dp_accounting``'s ``DpEvent`` classes: an event kind and its parameters are never removed
or renamed; a new parameter must be optional, its default meaning what old entries meant;
the meaning of a kind or a parameter (what the mechanism is, how a composition accounts for
it, under which neighbouring relation) never changes; a different mechanism is a new kind.
Accounting may only become tighter where the new bound is proved for the same stated
mechanism. ``tests/accounting/data/events_v1.json`` holds one canonical entry per kind, as
ledgers store it; ``tests/accounting/test_accounting_event_stability.py`` checks each still
parses to the same event with the same (ε, δ), and that every kind has an entry there.

Examples
--------
>>> ev = Laplace(l1_sensitivity=1.0, scale=2.0)
>>> ev.budget()
PrivacyBudget(epsilon=0.5, delta=0.0)
>>> event_from_dict(ev.to_dict()) == ev
True
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, ClassVar

from ppdp._validation import check_delta, check_int, check_positive, check_real
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError, UnsupportedEventError

__all__ = [
    "COMPOSITIONS",
    "ZCDP",
    "Composed",
    "DiscreteLaplace",
    "EpsilonDelta",
    "Exponential",
    "GammaNorm",
    "Gaussian",
    "Laplace",
    "LocalRandomizer",
    "ObjectivePerturbation",
    "Parallel",
    "PermuteAndFlip",
    "PrivacyEvent",
    "Pufferfish",
    "as_event",
    "event_from_dict",
    "zcdp_rho_of",
]

#: The compositions an accountant may use.
COMPOSITIONS = ("basic", "pld", "rdp")

_REGISTRY: dict[str, type[PrivacyEvent]] = {}


def _float_up(x: Fraction) -> float:
    """The smallest float ``>= x`` exactly."""
    f = float(x)
    while Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def _float_down(x: Fraction) -> float:
    """The largest float ``<= x`` exactly."""
    f = float(x)
    while Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def _effective(sensitivity: float, granularity: float, dimension: int, norm: str) -> Fraction:
    """``Δ + c·Λ`` exactly, with ``c = d`` (L1) or ``c = √d`` rounded up (L2)."""
    if norm == "l1":
        factor = Fraction(dimension)
    else:
        root = math.sqrt(dimension)
        if Fraction(root) ** 2 < dimension:
            root = math.nextafter(root, math.inf)
        factor = Fraction(root)
    return Fraction(sensitivity) + factor * Fraction(granularity)


class PrivacyEvent:
    """Base class of the events; see the module docstring.

    Subclasses are keyword-only frozen dataclasses with a class attribute ``kind`` (the
    name in the canonical JSON) and ``compositions`` (those that can account for them).
    """

    kind: ClassVar[str] = ""
    compositions: ClassVar[tuple[str, ...]] = COMPOSITIONS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            _REGISTRY[cls.kind] = cls

    # -- basic composition ------------------------------------------------------------------

    def budget(self) -> PrivacyBudget:
        """The (ε, δ) this event costs under basic composition (rounded up)."""
        raise NotImplementedError

    @property
    def is_pure(self) -> bool:
        """True when the event is ε-DP with δ = 0 (its basic budget has δ = 0)."""
        try:
            return self.budget().delta == 0.0
        except UnsupportedEventError:
            return False

    def supports(self, composition: str) -> bool:
        """Whether ``composition`` can account for this event."""
        return composition in self.compositions

    def require(self, composition: str) -> None:
        """Raise :class:`UnsupportedEventError` unless ``composition`` can account for it."""
        if not self.supports(composition):
            others = " or ".join(repr(c) for c in self.compositions) or "none"
            raise UnsupportedEventError(
                f"event {self.describe()} cannot be accounted for under composition "
                f"{composition!r}; a ledger with composition {others} can"
            )

    # -- canonical form ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Canonical JSON-safe form: ``{"kind": ..., <fields in declaration order>}``."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = [e.to_dict() for e in value]
            out[f.name] = value
        return out

    def describe(self) -> str:
        """A short one-line description (for ``ppdp budget show`` and error messages)."""
        parts = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                parts.append(f"{len(value)} events")
            elif value is not None and not (f.name == "granularity" and value == 0.0):
                parts.append(
                    f"{f.name}={value:g}" if isinstance(value, float) else f"{f.name}={value}"
                )
        return f"{type(self).__name__}({', '.join(parts)})"

    def leaves(self) -> tuple[PrivacyEvent, ...]:
        """The non-composite events, in order (an event that is not composite: itself)."""
        return (self,)


def _check(kind: str, name: str, value: Any, check: Any, **kw: Any) -> Any:
    return check(f"{kind}.{name}", value, **kw)


@dataclass(frozen=True, kw_only=True)
class EpsilonDelta(PrivacyEvent):
    """A stated (ε, δ)-DP guarantee with no finer structure (what old ledgers record).

    PLD accounts for it as the worst (ε, δ)-DP mechanism (``from_privacy_parameters``);
    RDP only when δ = 0 (ε-DP implies ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.4).
    ε = 0 is allowed (a check of a free step); a spend needs ε > 0.
    """

    kind: ClassVar[str] = "epsilon-delta"
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _nonneg(self.kind, "epsilon", self.epsilon))
        object.__setattr__(self, "delta", _check(self.kind, "delta", self.delta, check_delta))

    def budget(self) -> PrivacyBudget:
        return PrivacyBudget(self.epsilon, self.delta)

    def supports(self, composition: str) -> bool:
        return composition in ("basic", "pld") or (composition == "rdp" and self.delta == 0.0)

    @property
    def compositions(self) -> tuple[str, ...]:  # type: ignore[override]
        return COMPOSITIONS if self.delta == 0.0 else ("basic", "pld")


@dataclass(frozen=True, kw_only=True)
class _PureEvent(PrivacyEvent):
    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", _check(self.kind, "epsilon", self.epsilon, check_positive)
        )

    def budget(self) -> PrivacyBudget:
        return PrivacyBudget(self.epsilon)


@dataclass(frozen=True, kw_only=True)
class Exponential(_PureEvent):
    """The exponential mechanism (ε-DP): one selection with probability ∝ exp(εu/2Δ)."""

    kind: ClassVar[str] = "exponential"


@dataclass(frozen=True, kw_only=True)
class PermuteAndFlip(_PureEvent):
    """Permute-and-flip selection (ε-DP, McKenna & Sheldon 2020)."""

    kind: ClassVar[str] = "permute-and-flip"


@dataclass(frozen=True, kw_only=True)
class LocalRandomizer(_PureEvent):
    """A local randomizer applied by each respondent (ε-local DP, hence ε-DP centrally).

    ``randomizer`` names it (``"additive"``, ``"characteristic-vector"``, ...).
    """

    kind: ClassVar[str] = "local-randomizer"
    randomizer: str = "local"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.randomizer, str) or not self.randomizer:
            raise ParameterError(
                f"{self.kind}.randomizer ({self.randomizer!r}) must be a non-empty string"
            )


@dataclass(frozen=True, kw_only=True)
class Pufferfish(_PureEvent):
    """ε-Pufferfish privacy (the Markov Quilt Mechanism and its baselines).

    Pufferfish has no general composition theorem: only basic composition of the stated ε
    is recorded (as bookkeeping), and only a ``basic`` ledger accepts it.
    """

    kind: ClassVar[str] = "pufferfish"
    compositions: ClassVar[tuple[str, ...]] = ("basic",)
    mechanism: str = "MQM"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.mechanism, str) or not self.mechanism:
            raise ParameterError(
                f"{self.kind}.mechanism ({self.mechanism!r}) must be a non-empty string"
            )


@dataclass(frozen=True, kw_only=True)
class Laplace(PrivacyEvent):
    """Laplace noise of scale ``scale`` on a query of L1 sensitivity ``l1_sensitivity``.

    ``granularity`` (Λ) and ``dimension`` (d) describe ppdp's grid snapping: the noise is
    calibrated for, and every computation uses, the effective sensitivity ``Δ + d·Λ``.
    ε = (Δ + d·Λ)/b, rounded up, unless ``epsilon`` states the (not smaller) ε the noise
    was calibrated for: basic composition charges that.
    """

    kind: ClassVar[str] = "laplace"
    l1_sensitivity: float
    scale: float
    dimension: int = 1
    granularity: float = 0.0
    epsilon: float | None = None

    def __post_init__(self) -> None:
        k = self.kind
        object.__setattr__(
            self, "l1_sensitivity", _check(k, "l1_sensitivity", self.l1_sensitivity, check_positive)
        )
        object.__setattr__(self, "scale", _check(k, "scale", self.scale, check_positive))
        object.__setattr__(
            self, "dimension", _check(k, "dimension", self.dimension, check_int, minimum=1)
        )
        object.__setattr__(self, "granularity", _nonneg(k, "granularity", self.granularity))
        _check_stated(self, self.effective_sensitivity / Fraction(self.scale))

    @property
    def effective_sensitivity(self) -> Fraction:
        """``Δ + d·Λ``, exactly."""
        return _effective(self.l1_sensitivity, self.granularity, self.dimension, "l1")

    @property
    def noise_multiplier(self) -> float:
        """``b / (Δ + d·Λ)`` rounded down (the conservative direction)."""
        return _float_down(Fraction(self.scale) / self.effective_sensitivity)

    def budget(self) -> PrivacyBudget:
        if self.epsilon is not None:
            return PrivacyBudget(self.epsilon)
        return PrivacyBudget(_float_up(self.effective_sensitivity / Fraction(self.scale)))


@dataclass(frozen=True, kw_only=True)
class DiscreteLaplace(PrivacyEvent):
    """Discrete Laplace noise, ``P(k) ∝ exp(−|k|/scale)`` on the integers, added to an
    integer-valued query of integer L1 sensitivity ``l1_sensitivity``.

    No grid: the value and the noise are integers. ε = Δ/b, rounded up, unless ``epsilon``
    states the (not smaller) ε the noise was calibrated for. Not a :class:`Laplace` event:
    both are ε-DP at the same Δ/b, but their privacy loss distributions differ (at Δ = 1
    the discrete one *is* randomised response, the worst ε-DP pair), so PLD must tell them
    apart (``docs/proofs/discrete-laplace.md``).
    """

    kind: ClassVar[str] = "discrete-laplace"
    l1_sensitivity: int
    scale: float
    dimension: int = 1
    epsilon: float | None = None

    def __post_init__(self) -> None:
        k = self.kind
        object.__setattr__(
            self,
            "l1_sensitivity",
            _check(k, "l1_sensitivity", self.l1_sensitivity, check_int, minimum=1),
        )
        object.__setattr__(self, "scale", _check(k, "scale", self.scale, check_positive))
        object.__setattr__(
            self, "dimension", _check(k, "dimension", self.dimension, check_int, minimum=1)
        )
        _check_stated(self, Fraction(self.l1_sensitivity) / Fraction(self.scale))

    @property
    def noise_parameter(self) -> float:
        """``a = 1/b`` rounded up (the conservative direction: less noise), the parameter
        of ``dp-accounting``'s discrete Laplace, ``P(k) ∝ exp(−a|k|)``."""
        return _float_up(1 / Fraction(self.scale))

    @property
    def exact_pld(self) -> bool:
        """Whether the discrete Laplace PLD at sensitivity Δ covers every neighbouring pair.

        True for a scalar (``dimension == 1``) or ``Δ == 1``, where the pair shifted by
        exactly Δ in one coordinate is the worst case (``docs/proofs/discrete-laplace.md``
        §3); otherwise PLD uses the worst ε-DP pair.
        """
        return self.dimension == 1 or self.l1_sensitivity == 1

    def budget(self) -> PrivacyBudget:
        if self.epsilon is not None:
            return PrivacyBudget(self.epsilon)
        return PrivacyBudget(_float_up(Fraction(self.l1_sensitivity) / Fraction(self.scale)))


@dataclass(frozen=True, kw_only=True)
class Gaussian(PrivacyEvent):
    """Gaussian noise N(0, σ²I) on a query of L2 sensitivity ``l2_sensitivity``.

    ``granularity`` and ``dimension`` describe the grid snapping (effective sensitivity
    ``Δ + √d·Λ``). ``epsilon`` and ``delta`` are the (ε, δ) the noise was calibrated
    for, which basic composition charges; they are checked against the exact Gaussian
    privacy profile (Balle & Wang 2018, Thm 8) at construction. Without them only
    ``pld`` and ``rdp`` can account for the event.
    """

    kind: ClassVar[str] = "gaussian"
    l2_sensitivity: float
    sigma: float
    dimension: int = 1
    granularity: float = 0.0
    epsilon: float | None = None
    delta: float | None = None

    def __post_init__(self) -> None:
        k = self.kind
        object.__setattr__(
            self, "l2_sensitivity", _check(k, "l2_sensitivity", self.l2_sensitivity, check_positive)
        )
        object.__setattr__(self, "sigma", _check(k, "sigma", self.sigma, check_positive))
        object.__setattr__(
            self, "dimension", _check(k, "dimension", self.dimension, check_int, minimum=1)
        )
        object.__setattr__(self, "granularity", _nonneg(k, "granularity", self.granularity))
        if _stated_pair(self, "the noise was calibrated for"):
            eps, delta = self.epsilon, self.delta
            from ppdp.mechanisms.calibration import gaussian_delta

            needed = gaussian_delta(self.noise_multiplier, eps, 1.0)
            # Relative 1e-9: the float evaluation of the profile, not a privacy allowance.
            if needed > delta * (1.0 + 1e-9):
                raise ParameterError(
                    f"{k}.delta ({delta!r}) is below the δ ({needed:.6g}) that σ = "
                    f"{self.sigma!r} on L2 sensitivity {float(self.effective_sensitivity)!r} "
                    f"gives at ε = {eps!r}; "
                    "state the (ε, δ) the noise was calibrated for"
                )

    @property
    def effective_sensitivity(self) -> Fraction:
        """``Δ + √d·Λ`` (√d rounded up), exactly."""
        return _effective(self.l2_sensitivity, self.granularity, self.dimension, "l2")

    @property
    def noise_multiplier(self) -> float:
        """``σ / (Δ + √d·Λ)`` rounded down (the conservative direction)."""
        return _float_down(Fraction(self.sigma) / self.effective_sensitivity)

    def budget(self) -> PrivacyBudget:
        if self.epsilon is None or self.delta is None:
            raise UnsupportedEventError(
                f"event {self.describe()} states no (ε, δ), so basic composition cannot "
                "charge it; a ledger with composition 'pld' or 'rdp' can"
            )
        return PrivacyBudget(self.epsilon, self.delta)

    def supports(self, composition: str) -> bool:
        return composition != "basic" or self.epsilon is not None

    @property
    def compositions(self) -> tuple[str, ...]:  # type: ignore[override]
        return COMPOSITIONS if self.epsilon is not None else ("pld", "rdp")


@dataclass(frozen=True, kw_only=True)
class GammaNorm(PrivacyEvent):
    """Output perturbation with noise of density ∝ exp(−‖b‖₂/scale) in ``dimension`` dims.

    ε-DP with ε = (Δ₂ + √d·Λ)/scale (Chaudhuri, Monteleoni & Sarwate 2011, Thm 6; Λ the
    grid ``granularity`` the centre and the noise are snapped to, ``docs/proofs/noise.md``),
    rounded up, unless ``epsilon`` states the (not smaller) ε it was calibrated for.
    """

    kind: ClassVar[str] = "gamma-norm"
    l2_sensitivity: float
    scale: float
    dimension: int = 1
    granularity: float = 0.0
    epsilon: float | None = None

    def __post_init__(self) -> None:
        k = self.kind
        object.__setattr__(
            self, "l2_sensitivity", _check(k, "l2_sensitivity", self.l2_sensitivity, check_positive)
        )
        object.__setattr__(self, "scale", _check(k, "scale", self.scale, check_positive))
        object.__setattr__(
            self, "dimension", _check(k, "dimension", self.dimension, check_int, minimum=1)
        )
        object.__setattr__(self, "granularity", _nonneg(k, "granularity", self.granularity))
        _check_stated(self, self.effective_sensitivity / Fraction(self.scale))

    @property
    def effective_sensitivity(self) -> Fraction:
        """``Δ + √d·Λ`` (√d rounded up), exactly: the snapped centres' largest distance."""
        return _effective(self.l2_sensitivity, self.granularity, self.dimension, "l2")

    def budget(self) -> PrivacyBudget:
        if self.epsilon is not None:
            return PrivacyBudget(self.epsilon)
        return PrivacyBudget(_float_up(self.effective_sensitivity / Fraction(self.scale)))


@dataclass(frozen=True, kw_only=True)
class ObjectivePerturbation(PrivacyEvent):
    """Objective perturbation of a regularised ERM (Chaudhuri et al. 2011; Kifer et al. 2012).

    Its guarantee is the stated (ε, δ) of the whole training run; tight compositions use
    it as the worst (ε, δ)-DP mechanism (RDP only when δ = 0).
    """

    kind: ClassVar[str] = "objective-perturbation"
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", _check(self.kind, "epsilon", self.epsilon, check_positive)
        )
        object.__setattr__(self, "delta", _check(self.kind, "delta", self.delta, check_delta))

    def budget(self) -> PrivacyBudget:
        return PrivacyBudget(self.epsilon, self.delta)

    def supports(self, composition: str) -> bool:
        return composition in ("basic", "pld") or (composition == "rdp" and self.delta == 0.0)

    @property
    def compositions(self) -> tuple[str, ...]:  # type: ignore[override]
        return COMPOSITIONS if self.delta == 0.0 else ("basic", "pld")


def _check_stated(event: Any, exact: Fraction) -> None:
    """A stated ε (what the noise was calibrated for) must cover the exact ε of the noise."""
    if event.epsilon is None:
        return
    eps = check_positive(f"{event.kind}.epsilon", event.epsilon)
    object.__setattr__(event, "epsilon", eps)
    # Relative 2⁻⁵⁰: the float evaluation of a scale (Δ + c·Λ)/ε, not a privacy allowance.
    if Fraction(eps) * (1 + Fraction(1, 2**50)) < exact:
        raise ParameterError(
            f"{event.kind}.epsilon ({eps!r}) is below the ε ({float(exact)!r}) that this "
            "noise scale gives; state the ε the noise was calibrated for, or leave it out"
        )


def _stated_pair(event: Any, meaning: str) -> bool:
    """Check an event's optional stated (ε, δ) (both or neither) and store them checked;
    whether they were given. ``meaning`` says what the pair is, for the error line."""
    k, eps, delta = event.kind, event.epsilon, event.delta
    if (eps is None) != (delta is None):
        raise ParameterError(
            f"{k}.epsilon ({eps!r}) and {k}.delta ({delta!r}) must be given together (the "
            f"(ε, δ) {meaning}) or both left out"
        )
    if eps is None:
        return False
    object.__setattr__(event, "epsilon", _check(k, "epsilon", eps, check_positive))
    object.__setattr__(event, "delta", _check(k, "delta", delta, check_delta, allow_zero=False))
    return True


def _nonneg(kind: str, name: str, value: Any) -> float:
    v = check_real(f"{kind}.{name}", value)
    if not (math.isfinite(v) and v >= 0):
        raise ParameterError(f"{kind}.{name} ({v!r}) must be a finite number >= 0")
    return v


def _check_events(kind: str, events: Any) -> tuple[PrivacyEvent, ...]:
    if isinstance(events, PrivacyEvent) or not isinstance(events, Sequence | tuple):
        raise ParameterTypeError(f"{kind}.events ({events!r}) must be a sequence of events")
    out = tuple(events)
    if not out:
        raise ParameterError(f"{kind}.events (empty) must hold at least one event")
    for e in out:
        if not isinstance(e, PrivacyEvent):
            raise ParameterTypeError(
                f"{kind}.events holds {e!r}, not a ppdp.accounting.events event"
            )
    return out


_DEC = decimal.Context(prec=1000, traps=[decimal.Inexact, decimal.InvalidOperation])


def _dec(x: float) -> decimal.Decimal:
    return decimal.Decimal(repr(float(x)))


def _dec_to_float_up(d: decimal.Decimal) -> float:
    """The smallest float whose shortest repr is ``>= d`` (the ledger's decimal arithmetic)."""
    x = float(d)
    while _dec(x) < d:
        x = math.nextafter(x, math.inf)
    return x


@dataclass(frozen=True, kw_only=True)
class Composed(PrivacyEvent):
    """Several events on the same data, one after the other (sequential composition)."""

    kind: ClassVar[str] = "composed"
    events: tuple[PrivacyEvent, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", _check_events(self.kind, self.events))

    def budget(self) -> PrivacyBudget:
        eps = delta = decimal.Decimal(0)
        for e in self.events:
            b = e.budget()
            eps, delta = _DEC.add(eps, _dec(b.epsilon)), _DEC.add(delta, _dec(b.delta))
        d = _dec_to_float_up(delta)
        if d >= 1.0:
            raise ParameterError(f"{self.kind}: the δ of its events sums to {delta} >= 1")
        return PrivacyBudget(_dec_to_float_up(eps), d)

    def supports(self, composition: str) -> bool:
        return all(e.supports(composition) for e in self.events)

    @property
    def compositions(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(c for c in COMPOSITIONS if self.supports(c))

    def require(self, composition: str) -> None:
        for e in self.events:
            e.require(composition)

    def describe(self) -> str:
        return f"Composed({', '.join(e.describe() for e in self.events)})"

    def leaves(self) -> tuple[PrivacyEvent, ...]:
        return tuple(leaf for e in self.events for leaf in e.leaves())


@dataclass(frozen=True, kw_only=True)
class Parallel(PrivacyEvent):
    """Events on *disjoint* parts of the data (parallel composition: the costliest part).

    Basic composition charges the largest ε and the largest δ of the parts. PLD and RDP
    account for it as its part when every part is the same event; otherwise as the worst
    (ε, δ)-DP mechanism at the largest ε and δ (:meth:`envelope`): a neighbour changes one
    part only, and each part's pair of output laws is dominated by that mechanism's.
    """

    kind: ClassVar[str] = "parallel"
    events: tuple[PrivacyEvent, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", _check_events(self.kind, self.events))

    def budget(self) -> PrivacyBudget:
        budgets = [e.budget() for e in self.events]
        return PrivacyBudget(max(b.epsilon for b in budgets), max(b.delta for b in budgets))

    @property
    def uniform(self) -> bool:
        """Whether every part is the same event."""
        return all(e == self.events[0] for e in self.events)

    def envelope(self) -> EpsilonDelta | None:
        """The worst (ε, δ)-DP event at the largest ε and δ of the parts (None: no basic ε)."""
        try:
            b = self.budget()
        except UnsupportedEventError:
            return None
        return EpsilonDelta(epsilon=b.epsilon, delta=b.delta)

    def supports(self, composition: str) -> bool:
        if composition == "basic":
            return all(e.supports("basic") for e in self.events)
        if self.uniform:
            return self.events[0].supports(composition)
        if not all(e.supports(composition) for e in self.events):
            return False
        env = self.envelope()
        return env is not None and env.supports(composition)

    @property
    def compositions(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(c for c in COMPOSITIONS if self.supports(c))

    def leaves(self) -> tuple[PrivacyEvent, ...]:
        return (self,)

    def describe(self) -> str:
        if self.uniform:
            return f"Parallel({len(self.events)} × {self.events[0].describe()})"
        return f"Parallel({', '.join(e.describe() for e in self.events)})"


def zcdp_rho_of(event: PrivacyEvent) -> float:
    """The ρ of the zCDP guarantee one non-composite event gives, rounded up.

    Gaussian: ``(Δ + √d·Λ)²/(2σ²)``; the exponential mechanism: ``ε²/8`` (bounded range,
    Cesar & Rogers 2021, Lemma 3.2); any other ε-DP event: ``ε²/2`` (Bun & Steinke 2016,
    Prop. 1.4). Raises :class:`ParameterError` for an event with no such bound (δ > 0,
    Pufferfish) or a composite one.
    """
    if isinstance(event, Gaussian):
        return _float_up(event.effective_sensitivity**2 / (2 * Fraction(event.sigma) ** 2))
    if isinstance(event, Composed | Parallel | ZCDP) or not event.supports("rdp"):
        raise ParameterError(
            f"zcdp.events holds {event.describe()}, which has no zCDP bound of its own; "
            "allowed: Gaussian, exponential and other pure ε-DP events"
        )
    eps = Fraction(event.budget().epsilon)
    return _float_up(eps * eps / (8 if isinstance(event, Exponential) else 2))


@dataclass(frozen=True, kw_only=True)
class ZCDP(PrivacyEvent):
    """A release that is ρ-zero-concentrated DP as a whole (Bun & Steinke 2016).

    ``rho`` is the guarantee: RDP accounts for it as ``ε(α) = αρ`` at every order α
    (``dp_accounting``'s ``ZCDpEvent``). ``epsilon`` and ``delta`` are the (ε, δ) the
    release converted ρ to and states, which basic composition charges; they are checked
    against the conversion of Canonne, Kamath & Steinke 2020
    (:func:`ppdp.mechanisms.calibration.zcdp_delta`) at construction.

    ``events`` are the draws that make the release ρ-zCDP, when it states them: Gaussian
    noise and exponential-mechanism choices (each adaptively composed, their ρ summing to at
    most ``rho``). PLD and RDP then compose the draws themselves (PLD has no zCDP
    construction; a Gaussian's own PLD is much tighter than the worst pair at the stated
    (ε, δ)). Without draws, PLD uses the worst (ε, δ)-DP pair at the stated (ε, δ), and
    with neither, only RDP can account for the event. See ``docs/proofs/composition.md``.
    """

    kind: ClassVar[str] = "zcdp"
    rho: float
    epsilon: float | None = None
    delta: float | None = None
    events: tuple[PrivacyEvent, ...] = ()

    def __post_init__(self) -> None:
        k = self.kind
        rho = _check(k, "rho", self.rho, check_positive)
        object.__setattr__(self, "rho", rho)
        if _stated_pair(self, "ρ was converted to"):
            eps, delta = self.epsilon, self.delta
            from ppdp.mechanisms.calibration import zcdp_delta

            needed = zcdp_delta(rho, eps)
            # Relative 1e-9: the float evaluation of the conversion, not a privacy allowance.
            if needed > delta * (1.0 + 1e-9):
                raise ParameterError(
                    f"{k}.delta ({delta!r}) is below the δ ({needed:.6g}) that ρ = {rho!r} "
                    f"gives at ε = {eps!r}; state the (ε, δ) ρ was converted to"
                )
        object.__setattr__(self, "events", self._checked_draws())

    def _checked_draws(self) -> tuple[PrivacyEvent, ...]:
        k = self.kind
        if isinstance(self.events, list | tuple) and not self.events:
            return ()
        draws = _check_events(k, self.events)
        total = sum(Fraction(zcdp_rho_of(e)) for e in draws)
        # Relative 1e-9: a plan splits ρ in floats, so its parts may sum an ulp above it.
        if total > Fraction(self.rho) * (1 + Fraction(1, 10**9)):
            raise ParameterError(
                f"{k}.rho ({self.rho!r}) is below the ρ ({float(total):.6g}) of its events; "
                "state the ρ the draws spend"
            )
        return draws

    def budget(self) -> PrivacyBudget:
        if self.epsilon is None or self.delta is None:
            raise UnsupportedEventError(
                f"event {self.describe()} states no (ε, δ), so basic composition cannot "
                "charge it; a ledger with composition 'rdp' can"
            )
        return PrivacyBudget(self.epsilon, self.delta)

    def supports(self, composition: str) -> bool:
        return composition in self.compositions

    def describe(self) -> str:
        parts = [f"rho={self.rho:g}"]
        if self.epsilon is not None:
            parts.append(f"epsilon={self.epsilon:g}, delta={self.delta:g}")
        if self.events:
            parts.append(f"{len(self.events)} draws")
        return f"ZCDP({', '.join(parts)})"

    @property
    def compositions(self) -> tuple[str, ...]:  # type: ignore[override]
        stated = self.epsilon is not None
        return tuple(
            c
            for c, ok in (("basic", stated), ("pld", stated or bool(self.events)), ("rdp", True))
            if ok
        )


def event_from_dict(data: Mapping[str, Any]) -> PrivacyEvent:
    """Inverse of :meth:`PrivacyEvent.to_dict` (validates every field)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise ParameterError(f"event ({data!r}) must be a mapping with a 'kind'")
    cls = _REGISTRY.get(data["kind"])
    if cls is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ParameterError(f"event kind ({data['kind']!r}) must be one of {known}")
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    extra = set(data) - names - {"kind"}
    if extra:
        raise ParameterError(f"event {data['kind']!r} has unknown fields {sorted(extra)}")
    kwargs = dict(data)
    del kwargs["kind"]
    if "events" in kwargs:
        if not isinstance(kwargs["events"], list | tuple):
            raise ParameterError(f"event {data['kind']!r}: events must be a list")
        kwargs["events"] = tuple(event_from_dict(e) for e in kwargs["events"])
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ParameterError(f"event {data['kind']!r}: {exc}") from None


def as_event(value: PrivacyEvent | PrivacyBudget | Sequence[PrivacyEvent]) -> PrivacyEvent:
    """An event from an event, a sequence of events (composed) or a bare PrivacyBudget."""
    if isinstance(value, PrivacyEvent):
        return value
    if isinstance(value, PrivacyBudget):
        return EpsilonDelta(epsilon=value.epsilon, delta=value.delta)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        events = tuple(value)
        if len(events) == 1 and isinstance(events[0], PrivacyEvent):
            return events[0]
        return Composed(events=events)
    raise ParameterTypeError(
        f"event ({value!r}) must be a ppdp.accounting.events event, a sequence of them, or "
        "a PrivacyBudget"
    )
