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

from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import LedgerIntegrityError, ParameterError
from ppdp.ledger import Entry

__all__ = ["SpendRecord", "Tally", "dec", "float_at_most"]

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


def accountant_metadata(total: PrivacyBudget, relation: Neighbouring) -> dict[str, Any]:
    """What the genesis entry of a budget ledger pins."""
    return {
        ACCOUNTANT_KEY: {
            "version": 1,
            "composition": "basic",
            "total": {"epsilon": total.epsilon, "delta": total.delta},
            "relation": relation.value,
        }
    }


def read_accountant_metadata(metadata: dict[str, Any]) -> tuple[PrivacyBudget, Neighbouring]:
    """The total and relation pinned in a budget ledger's genesis entry."""
    meta = metadata.get(ACCOUNTANT_KEY)
    try:
        if not isinstance(meta, dict) or meta.get("composition") != "basic":
            raise ValueError
        total = PrivacyBudget(meta["total"]["epsilon"], meta["total"]["delta"])
        relation = Neighbouring.parse(meta["relation"])
    except (ValueError, TypeError, KeyError):
        raise ParameterError(
            "ledger: this ledger is not a privacy-budget ledger (its genesis entry pins no "
            "accountant total and relation)"
        ) from None
    return total, relation


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
            "entry_hash": self.entry_hash,
        }

    @classmethod
    def from_entry(cls, entry: Entry) -> SpendRecord:
        """Read a spend entry; a malformed one is an integrity failure at its index."""
        p = entry.payload
        try:
            if set(p) != {
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
            if p["composition"] != "basic":
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
            )
        except (ValueError, TypeError) as exc:
            raise LedgerIntegrityError(
                f"entry {entry.index}: malformed spend entry ({exc})", index=entry.index
            ) from None
        return record


class Tally:
    """Replays a budget ledger's entries into exact totals (basic composition).

    Fails closed: a spend with another relation, a repeated idempotency key, or a running
    total above the ledger's limit is an integrity failure at that entry's index (the
    accountant never writes such entries, so only a misbehaving signer could have).
    """

    def __init__(self, total: PrivacyBudget, relation: Neighbouring) -> None:
        self.total = total
        self.relation = relation
        self.total_eps = dec(total.epsilon)
        self.total_delta = dec(total.delta)
        self.spent_eps = decimal.Decimal(0)
        self.spent_delta = decimal.Decimal(0)
        self.records: list[SpendRecord] = []
        self.by_key: dict[str, SpendRecord] = {}
        self.folded = 0

    def fold(self, entries: list[Entry]) -> None:
        """Account for the next entries (each index must follow the last one folded)."""
        for entry in entries:
            if entry.index < self.folded:
                continue
            if entry.index != self.folded:
                raise LedgerIntegrityError(f"entry {self.folded}: missing", index=self.folded)
            if entry.kind == SPEND:
                self._spend(SpendRecord.from_entry(entry))
            self.folded = entry.index + 1

    def _spend(self, record: SpendRecord) -> None:
        i = record.index
        if record.relation is not self.relation:
            raise LedgerIntegrityError(
                f"entry {i}: spend for relation {record.relation.value}, ledger is "
                f"{self.relation.value}",
                index=i,
            )
        key = record.idempotency_key
        if key is not None and key in self.by_key:
            raise LedgerIntegrityError(
                f"entry {i}: idempotency key {key!r} already charged at entry "
                f"{self.by_key[key].index}",
                index=i,
            )
        eps = add(self.spent_eps, dec(record.epsilon))
        delta = add(self.spent_delta, dec(record.delta))
        if eps > self.total_eps or delta > self.total_delta:
            raise LedgerIntegrityError(
                f"entry {i}: spend takes the total to ε={eps}, δ={delta}, above the ledger's "
                f"limit ε={self.total_eps}, δ={self.total_delta}",
                index=i,
            )
        self.spent_eps, self.spent_delta = eps, delta
        self.records.append(record)
        if key is not None:
            self.by_key[key] = record

    def fits(self, budget: PrivacyBudget) -> bool:
        """Whether ``spent + budget <= total`` in exact decimal arithmetic."""
        return (
            add(self.spent_eps, dec(budget.epsilon)) <= self.total_eps
            and add(self.spent_delta, dec(budget.delta)) <= self.total_delta
        )

    @property
    def spent(self) -> PrivacyBudget:
        """Total charged so far (nearest floats of the exact decimal sums)."""
        return PrivacyBudget(float(self.spent_eps), min(float(self.spent_delta), _BELOW_ONE))

    @property
    def remaining(self) -> PrivacyBudget:
        """What is left, rounded down so that spending exactly this always fits."""
        return PrivacyBudget(
            float_at_most(sub(self.total_eps, self.spent_eps)),
            float_at_most(sub(self.total_delta, self.spent_delta)),
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
