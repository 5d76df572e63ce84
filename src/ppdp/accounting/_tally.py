"""Spend records and exact running totals under basic composition.

Totals are kept as :class:`decimal.Decimal` sums of each float's *shortest repr*
(``Decimal(repr(x))``), the decimal number a person wrote. Summing the floats' exact
binary values (in rationals) over-counts: ``0.01`` as a double is slightly above 1/100, so
300 of them exceed 3 and the 300th spend of 0.01 against a total of 3.0 would be refused.
A running binary float sum drifts either way (``0.1 + 0.2 > 0.3`` refuses a spend that
fits; ``sum([0.1] * 10) < 1.0`` admits more than fits). In decimal, 300 × 0.01 is exactly
3.00 and 0.1 + 0.2 is exactly 0.3. The decimal of a float differs from its binary value by
at most half an ulp (a relative 1.1e-16), so the binary sum of the admitted spends may
exceed the total by at most that much per spend: about 1e-16 · ε_total for a few hundred
spends, far below any meaningful privacy difference. The arithmetic itself is exact: the
context has 1000 digits and traps any inexact result.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass, field
from typing import Any

from ppdp.accounting.events import COMPOSITIONS, EpsilonDelta, PrivacyEvent, event_from_dict
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import LedgerIntegrityError, ParameterError, UnsupportedEventError
from ppdp.ledger import Entry

__all__ = ["SpendRecord", "Tally", "dec", "float_at_most"]

#: Relative tolerance when *re-verifying* a tight ledger's totals (the composed ε is a float
#: computation; another machine may round its last bits differently). The accountant
#: itself admits a spend only if the composed ε is <= the target exactly.
VERIFY_RTOL = 1e-9

SPEND = "spend"
ACCOUNTANT_KEY = "accountant"

# 1000 digits hold the sum of any reasonable number of floats' reprs exactly (their
# decimal exponents span -324..308); Inexact is trapped so that claim is checked.
_CTX = decimal.Context(
    prec=1000,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.Inexact, decimal.InvalidOperation, decimal.Overflow],
)


def dec(x: float) -> decimal.Decimal:
    """The decimal of ``x``'s shortest repr (``0.1`` -> ``Decimal('0.1')``)."""
    return decimal.Decimal(repr(float(x)))


def add(a: decimal.Decimal, b: decimal.Decimal) -> decimal.Decimal:
    """Exact decimal addition."""
    return _CTX.add(a, b)


def sub(a: decimal.Decimal, b: decimal.Decimal) -> decimal.Decimal:
    """Exact decimal subtraction."""
    return _CTX.subtract(a, b)


def float_at_most(d: decimal.Decimal) -> float:
    """The largest float whose repr-decimal is ``<= d`` (so spending it always fits)."""
    x = float(d)
    while x > 0 and dec(x) > d:
        x = math.nextafter(x, 0.0)
    return max(x, 0.0)


def check_composition(composition: object, total: PrivacyBudget | None = None) -> str:
    """A composition name, and (for PLD / RDP) a total with a target δ > 0."""
    if not isinstance(composition, str) or composition not in COMPOSITIONS:
        allowed = ", ".join(repr(c) for c in COMPOSITIONS)
        raise ParameterError(f"composition ({composition!r}) must be one of {allowed}")
    if composition != "basic" and total is not None and total.delta == 0.0:
        raise ParameterError(
            f"total ({total}) has no δ: under composition {composition!r} the total is an "
            "(ε, δ) target; give a delta > 0 (PrivacyBudget(epsilon, delta); --delta)"
        )
    return composition


def accountant_metadata(
    total: PrivacyBudget, relation: Neighbouring, composition: str = "basic"
) -> dict[str, Any]:
    """What the genesis entry of a budget ledger pins (basic: the same as before issue 17)."""
    meta: dict[str, Any] = {
        "version": 1,
        "composition": composition,
        "total": {"epsilon": total.epsilon, "delta": total.delta},
        "relation": relation.value,
    }
    if composition == "pld":
        from ppdp.accounting._tight import DISCRETIZATION

        meta["pld"] = {"value_discretization_interval": DISCRETIZATION, "library": "dp-accounting"}
    elif composition == "rdp":
        meta["rdp"] = {"orders": "dp-accounting default", "library": "dp-accounting"}
    return {ACCOUNTANT_KEY: meta}


def read_composition(metadata: dict[str, Any]) -> str:
    """The composition pinned in a budget ledger's genesis entry (``basic`` if none)."""
    meta = metadata.get(ACCOUNTANT_KEY)
    if not isinstance(meta, dict):
        return "basic"
    value = meta.get("composition", "basic")
    if value not in COMPOSITIONS:
        raise ParameterError(
            f"ledger: its genesis entry pins composition {value!r}, which this version of "
            "ppdp does not know; upgrade ppdp"
        )
    return str(value)


def read_accountant_metadata(metadata: dict[str, Any]) -> tuple[PrivacyBudget, Neighbouring]:
    """The total and relation pinned in a budget ledger's genesis entry."""
    meta = metadata.get(ACCOUNTANT_KEY)
    try:
        if not isinstance(meta, dict):
            raise ValueError
        read_composition(metadata)
        total = PrivacyBudget(meta["total"]["epsilon"], meta["total"]["delta"])
        relation = Neighbouring.parse(meta["relation"])
    except (ValueError, TypeError, KeyError):
        raise ParameterError(
            "ledger: this ledger is not a privacy-budget ledger (its genesis entry pins no "
            "accountant total and relation)"
        ) from None
    return total, relation


def tally_for(metadata: dict[str, Any]) -> Tally:
    """A fresh :class:`Tally` for a budget ledger's genesis metadata."""
    total, relation = read_accountant_metadata(metadata)
    return Tally(total, relation, read_composition(metadata))


@dataclass(frozen=True)
class SpendRecord:
    """One charged spend, as recorded in the ledger.

    Attributes
    ----------
    index : int
        Ledger index of the spend entry.
    time : str
        ISO 8601 UTC time (informational).
    mechanism : str
        Name of the mechanism or pipeline charged.
    budget : PrivacyBudget
        The (ε, δ) charged.
    relation : Neighbouring
        The neighbouring relation the charge is for (always the ledger's).
    seeded : bool
        True when the release used a seeded, reproducible stream (not for production).
    idempotency_key : str or None
        The caller's key; retrying with it returns this record instead of charging again.
    details : dict
        The rest of the event as recorded (sensitivity, noise scale, ...), so a tighter
        accountant can recompute totals later.
    entry_hash : str
        Hex hash of the ledger entry.
    event : PrivacyEvent
        The typed event charged (entries written before typed events read as
        :class:`~ppdp.accounting.events.EpsilonDelta` of their ε and δ).
    replayed : bool
        True when :meth:`Accountant.spend` returned this record for a retried
        ``idempotency_key`` instead of charging again. The first attempt's release may
        already have left: release again only if it provably did not (two releases with
        fresh noise under one charge cost twice the recorded ε).
    """

    index: int
    time: str
    mechanism: str
    budget: PrivacyBudget
    relation: Neighbouring
    seeded: bool
    idempotency_key: str | None
    details: dict[str, Any] = field(hash=False, compare=False)
    entry_hash: str = ""
    replayed: bool = field(default=False, compare=False)
    event: PrivacyEvent | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.event is None:
            object.__setattr__(
                self, "event", EpsilonDelta(epsilon=self.budget.epsilon, delta=self.budget.delta)
            )

    @property
    def epsilon(self) -> float:
        """ε charged."""
        return self.budget.epsilon

    @property
    def delta(self) -> float:
        """δ charged."""
        return self.budget.delta

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "index": self.index,
            "time": self.time,
            "mechanism": self.mechanism,
            "epsilon": self.budget.epsilon,
            "delta": self.budget.delta,
            "relation": self.relation.value,
            "seeded": self.seeded,
            "idempotency_key": self.idempotency_key,
            "details": dict(self.details),
            "event": self.event.to_dict() if self.event is not None else None,
            "entry_hash": self.entry_hash,
        }

    @classmethod
    def from_entry(cls, entry: Entry) -> SpendRecord:
        """Read a spend entry; a malformed one is an integrity failure at its index."""
        p = entry.payload
        try:
            keys = set(p) - {"event"}
            if keys != {
                "mechanism",
                "epsilon",
                "delta",
                "relation",
                "seeded",
                "idempotency_key",
                "details",
                "composition",
            }:
                raise ValueError("unexpected fields")
            event = None
            if "event" in p:
                try:
                    event = event_from_dict(p["event"])
                except ParameterError as exc:
                    raise ValueError(f"event: {exc}") from None
            eps, delta = p["epsilon"], p["delta"]
            if type(eps) is not float or not (math.isfinite(eps) and eps > 0):
                raise ValueError("epsilon is not a finite float > 0")
            if type(delta) is not float:
                raise ValueError("delta is not a float")
            key = p["idempotency_key"]
            if not isinstance(p["mechanism"], str) or not (key is None or isinstance(key, str)):
                raise ValueError("mechanism or idempotency_key has the wrong type")
            if not isinstance(p["seeded"], bool) or not isinstance(p["details"], dict):
                raise ValueError("seeded or details has the wrong type")
            if p["composition"] not in COMPOSITIONS:
                raise ValueError("unknown composition")
            record = cls(
                entry.index,
                entry.time,
                p["mechanism"],
                PrivacyBudget(eps, delta),
                Neighbouring.parse(p["relation"]),
                p["seeded"],
                key,
                p["details"],
                entry.hash.hex(),
                event=event,
            )
        except (ValueError, TypeError) as exc:
            raise LedgerIntegrityError(
                f"entry {entry.index}: malformed spend entry ({exc})", index=entry.index
            ) from None
        return record


class Tally:
    """Replays a budget ledger's entries into running totals under its composition.

    ``basic``: exact decimal sums of each spend's ε and δ. ``pld`` / ``rdp``: the events
    composed with ``dp-accounting`` (:mod:`ppdp.accounting._tight`), reported as the
    composed ε at the total's δ.

    Fails closed: a spend with another relation or composition, a repeated idempotency
    key, an event the composition cannot take, or a running total above the ledger's
    limit is an integrity failure at that entry's index (the accountant never writes such
    entries, so only a misbehaving signer could have).
    """

    def __init__(
        self, total: PrivacyBudget, relation: Neighbouring, composition: str = "basic"
    ) -> None:
        self.total = total
        self.relation = relation
        self.composition = check_composition(composition, total)
        self.total_eps = dec(total.epsilon)
        self.total_delta = dec(total.delta)
        self.spent_eps = decimal.Decimal(0)
        self.spent_delta = decimal.Decimal(0)
        self.records: list[SpendRecord] = []
        self.by_key: dict[str, SpendRecord] = {}
        self.folded = 0
        self.composer: Any = None
        if composition != "basic":
            from ppdp.accounting._tight import make_composer

            self.composer = make_composer(composition, total.delta)

    @property
    def tight(self) -> bool:
        """True under ``pld`` or ``rdp``."""
        return self.composer is not None

    def fold(self, entries: list[Entry]) -> None:
        """Account for the next entries (each index must follow the last one folded)."""
        for entry in entries:
            if entry.index < self.folded:
                continue
            if entry.index != self.folded:
                raise LedgerIntegrityError(f"entry {self.folded}: missing", index=self.folded)
            if entry.kind == SPEND:
                self._spend(SpendRecord.from_entry(entry), entry.payload.get("composition"))
            self.folded = entry.index + 1

    def _spend(self, record: SpendRecord, composition: object = None) -> None:
        i = record.index
        if record.relation is not self.relation:
            raise LedgerIntegrityError(
                f"entry {i}: spend for relation {record.relation.value}, ledger is "
                f"{self.relation.value}",
                index=i,
            )
        if composition is not None and composition != self.composition:
            raise LedgerIntegrityError(
                f"entry {i}: spend under composition {composition}, ledger is {self.composition}",
                index=i,
            )
        key = record.idempotency_key
        if key is not None and key in self.by_key:
            raise LedgerIntegrityError(
                f"entry {i}: idempotency key {key!r} already charged at entry "
                f"{self.by_key[key].index}",
                index=i,
            )
        event = record.event
        assert event is not None
        if self.tight:
            try:
                self.composer.add(event)
            except UnsupportedEventError as exc:
                raise LedgerIntegrityError(f"entry {i}: {exc}", index=i) from None
            eps = self.composer.epsilon()
            if eps > self.total.epsilon * (1.0 + VERIFY_RTOL):
                raise LedgerIntegrityError(
                    f"entry {i}: spend takes the composed ε to {eps!r} at δ={self.total.delta!r} "
                    f"({self.composition}), above the ledger's limit ε={self.total.epsilon!r}",
                    index=i,
                )
        else:
            try:
                basic = event.budget()
            except UnsupportedEventError as exc:
                raise LedgerIntegrityError(f"entry {i}: {exc}", index=i) from None
            if dec(basic.epsilon) != dec(record.epsilon) or dec(basic.delta) != dec(record.delta):
                raise LedgerIntegrityError(
                    f"entry {i}: the charged (ε, δ) ({record.budget}) is not the event's ({basic})",
                    index=i,
                )
            eps_d = add(self.spent_eps, dec(record.epsilon))
            delta_d = add(self.spent_delta, dec(record.delta))
            if eps_d > self.total_eps or delta_d > self.total_delta:
                raise LedgerIntegrityError(
                    f"entry {i}: spend takes the total to ε={eps_d}, δ={delta_d}, above the "
                    f"ledger's limit ε={self.total_eps}, δ={self.total_delta}",
                    index=i,
                )
            self.spent_eps, self.spent_delta = eps_d, delta_d
        self.records.append(record)
        if key is not None:
            self.by_key[key] = record

    def charge_for(self, event: PrivacyEvent) -> PrivacyBudget:
        """The (ε, δ) a spend entry records for ``event``.

        Basic: the event's basic budget. PLD / RDP: the same when the event has one,
        else ε of the event alone at the target δ (informational: the total is composed).
        """
        if self.tight:
            self.composer.check(event)
            try:
                return event.budget()
            except UnsupportedEventError:
                return PrivacyBudget(self.composer.epsilon_alone(event), self.total.delta)
        return event.budget()

    def composed_with(self, event: PrivacyEvent) -> float:
        """PLD / RDP: the composed ε at the target δ if ``event`` were charged now."""
        self.composer.check(event)
        return float(self.composer.epsilon_with(event))

    def fits(self, budget: PrivacyBudget | PrivacyEvent) -> bool:
        """Whether charging ``budget`` (or an event) keeps the total within the limit.

        Basic: ``spent + budget <= total`` in exact decimal arithmetic. PLD / RDP: the
        composed ε at the total's δ, with the event, is ``<= total ε``.
        """
        event = (
            budget
            if isinstance(budget, PrivacyEvent)
            else EpsilonDelta(epsilon=budget.epsilon, delta=budget.delta)
            if budget.epsilon > 0
            else None
        )
        if self.tight:
            if event is None:
                return True
            return self.composed_with(event) <= self.total.epsilon
        b = budget.budget() if isinstance(budget, PrivacyEvent) else budget
        return (
            add(self.spent_eps, dec(b.epsilon)) <= self.total_eps
            and add(self.spent_delta, dec(b.delta)) <= self.total_delta
        )

    def fits_count(self, event: PrivacyEvent, *, limit: int = 100_000) -> int:
        """How many more copies of ``event`` fit (at most ``limit``); nothing is charged."""
        if self.tight:
            self.composer.check(event)
            from ppdp.accounting._tight import count_fitting

            return count_fitting(self.composer, event, self.total.epsilon, limit=limit)
        b = event.budget()
        counts = []
        for spent, total, part in (
            (self.spent_eps, self.total_eps, dec(b.epsilon)),
            (self.spent_delta, self.total_delta, dec(b.delta)),
        ):
            if part == 0:
                continue
            counts.append(int(_CTX.divide_int(sub(total, spent), part)))
        return min([limit, *counts])

    @property
    def spent(self) -> PrivacyBudget:
        """Total charged so far (basic: nearest floats of the exact sums; PLD / RDP: the
        composed ε at the total's δ, and that δ, once anything is charged)."""
        if self.tight:
            if not self.records:
                return PrivacyBudget(0.0)
            return PrivacyBudget(self.composer.epsilon(), self.total.delta)
        return PrivacyBudget(float(self.spent_eps), min(float(self.spent_delta), _BELOW_ONE))

    @property
    def remaining(self) -> PrivacyBudget:
        """What is left, rounded down so that spending exactly this always fits (basic).

        PLD / RDP: the ε headroom at the total's δ, ``total ε − composed ε``, with the
        total's δ. It is not additive: whether an event fits is decided by composing it.
        """
        if self.tight:
            eps = self.composer.epsilon() if self.records else 0.0
            head = sub(self.total_eps, dec(eps)) if eps <= self.total.epsilon else 0
            return PrivacyBudget(float_at_most(decimal.Decimal(head)), self.total.delta)
        return PrivacyBudget(
            float_at_most(sub(self.total_eps, self.spent_eps)),
            float_at_most(sub(self.total_delta, self.spent_delta)),
        )

    def remaining_after(self, event: PrivacyEvent) -> PrivacyBudget | None:
        """:attr:`remaining` once ``event`` is charged (None: it does not fit)."""
        if self.tight:
            eps = self.composed_with(event)
            if eps > self.total.epsilon:
                return None
            return PrivacyBudget(float_at_most(sub(self.total_eps, dec(eps))), self.total.delta)
        if not self.fits(event):
            return None
        b = event.budget()
        return PrivacyBudget(
            float_at_most(sub(sub(self.total_eps, self.spent_eps), dec(b.epsilon))),
            float_at_most(sub(sub(self.total_delta, self.spent_delta), dec(b.delta))),
        )


_BELOW_ONE = math.nextafter(1.0, 0.0)


def check_relation(value: object, expected: Neighbouring) -> None:
    """A spend's declared relation must be the ledger's (fail closed)."""
    relation = Neighbouring.parse(value)  # type: ignore[arg-type]
    if relation is not expected:
        raise ParameterError(
            f"relation ({relation.value!r}) differs from this ledger's relation "
            f"({expected.value!r}); a guarantee for one relation cannot be charged to a budget "
            "for the other: convert the mechanism's guarantee, or use a ledger for that relation"
        )
