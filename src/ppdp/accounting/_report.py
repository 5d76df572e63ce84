"""``budget_report(path)``: what a budget ledger has charged, read only after verification."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp.accounting._tally import SpendRecord, tally_for
from ppdp.accounting.events import Composed
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import UnsupportedEventError
from ppdp.ledger import (
    AnchorLike,
    AnchorRegistry,
    CheckpointLike,
    PublicKeyLike,
    VerificationReport,
    verify_entries,
)

__all__ = ["BudgetReport", "budget_report", "release_groups"]


@dataclass(frozen=True)
class BudgetReport:
    """A verified budget ledger's totals and spends.

    Attributes
    ----------
    path : Path
        The ledger file.
    dataset_id : str
        The dataset the budget belongs to.
    relation : Neighbouring
        The neighbouring relation of every charge.
    composition : str
        ``"basic"``, ``"pld"`` or ``"rdp"``, as pinned in the ledger.
    total, spent, remaining : PrivacyBudget
        Under the ledger's composition (see :attr:`ppdp.accounting.Accountant.remaining`).
    spends : tuple of SpendRecord
        Every charge, in ledger order.
    verification : VerificationReport
        What :func:`ppdp.ledger.verify` established.
    running : tuple of PrivacyBudget
        The total after each spend (same order as ``spends``), under the composition.
    could_still_release : int or None
        How many more releases like the last one fit now (None: no spends yet; counted up
        to 100 000).
    releases : mapping of int to int
        The spend entries whose release is recorded (a keyed release records one before it
        leaves the process), each with the index of its ``release`` entry.
    left : tuple of PrivacyBudget
        What the ledger had left after each spend (same order as ``spends``), as
        :attr:`remaining` is computed (exact, rounded down; under PLD / RDP the ε headroom
        at the total's δ).
    """

    path: Path
    dataset_id: str
    relation: Neighbouring
    composition: str
    total: PrivacyBudget
    spent: PrivacyBudget
    remaining: PrivacyBudget
    spends: tuple[SpendRecord, ...]
    verification: VerificationReport
    running: tuple[PrivacyBudget, ...] = ()
    could_still_release: int | None = None
    releases: Mapping[int, int] = field(default_factory=dict)
    left: tuple[PrivacyBudget, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "path": os.fspath(self.path),
            "dataset_id": self.dataset_id,
            "relation": self.relation.value,
            "composition": self.composition,
            "total": self.total.to_dict(),
            "spent": self.spent.to_dict(),
            "remaining": self.remaining.to_dict(),
            "spends": [
                {**s.to_dict(), "running": r.to_dict()}
                for s, r in zip(self.spends, self.running, strict=False)
            ],
            "could_still_release": self.could_still_release,
            "releases": {str(k): v for k, v in self.releases.items()},
            "ledger": self.verification.to_dict(),
        }


def last_release_records(records: Sequence[SpendRecord]) -> tuple[SpendRecord, ...]:
    """The entries of the last release: the last entry, with the entries charged with it
    when it is the last part (``release_part`` ``"n/n"``) of a release of several."""
    if not records:
        return ()
    part = str(records[-1].details.get("release_part", "1/1"))
    try:
        i, n = (int(x) for x in part.split("/"))
    except ValueError:
        return (records[-1],)
    tail = tuple(records[-n:]) if i == n and len(records) >= n else (records[-1],)
    expected = [f"{k}/{n}" for k in range(1, n + 1)]
    if n > 1 and [str(r.details.get("release_part")) for r in tail] != expected:
        return (records[-1],)
    return tail


def release_groups(records: Sequence[SpendRecord]) -> list[tuple[SpendRecord, ...]]:
    """``records`` grouped by release: the entries of a release charged in several parts
    (``release_part`` ``"1/n"`` to ``"n/n"``, in a row) together, any other entry alone."""
    groups: list[tuple[SpendRecord, ...]] = []
    i = 0
    while i < len(records):
        part = str(records[i].details.get("release_part", "1/1"))
        n = int(part.split("/")[1]) if re.fullmatch(r"1/\d+", part) else 1
        run = tuple(records[i : i + n])
        expected = [f"{k}/{n}" for k in range(1, n + 1)]
        if n > 1 and [str(r.details.get("release_part")) for r in run] != expected:
            run = run[:1]
        groups.append(run)
        i += len(run)
    return groups


def budget_report(
    path: str | os.PathLike[str],
    *,
    checkpoint: CheckpointLike | None = None,
    trusted_keys: Mapping[str, PublicKeyLike] | None = None,
    anchor: AnchorLike | None = None,
) -> BudgetReport:
    """Verify a budget ledger completely, then total its spends (needs no signing key).

    The ledger must extend ``checkpoint`` and ``anchor`` if given, and the anchor on record
    for its dataset id (:meth:`ppdp.ledger.AnchorRegistry.default`) if there is one.

    Raises
    ------
    FileNotFoundError
        The ledger does not exist.
    LedgerIntegrityError
        The ledger fails verification (nothing is read from it), or a spend entry breaks
        the accountant's rules.
    ParameterError
        The ledger is not a budget ledger.
    """
    report, entries = verify_entries(
        path,
        checkpoint=checkpoint,
        trusted_keys=trusted_keys,
        anchor=anchor,
        anchor_registry=AnchorRegistry.default(),
    )
    tally = tally_for(entries[0].payload["metadata"])
    running: list[PrivacyBudget] = []
    left: list[PrivacyBudget] = []
    releases: dict[int, int] = {}
    for entry in entries:
        tally.fold([entry])
        if entry.kind == "spend":
            running.append(tally.spent)
            left.append(tally.remaining)
        elif entry.kind == "release" and entry.payload.get("spend_index") is not None:
            releases.setdefault(int(entry.payload["spend_index"]), entry.index)
    could = None
    last_release = last_release_records(tally.records)
    if last_release:
        events = tuple(r.event for r in last_release if r.event is not None)
        try:
            could = tally.fits_count(events[0] if len(events) == 1 else Composed(events=events))
        except UnsupportedEventError:  # pragma: no cover - the ledger took it
            could = None
    return BudgetReport(
        path=Path(path),
        dataset_id=report.dataset_id,
        relation=tally.relation,
        composition=tally.composition,
        total=tally.total,
        spent=tally.spent,
        remaining=tally.remaining,
        spends=tuple(tally.records),
        verification=report,
        running=tuple(running),
        could_still_release=could,
        releases=releases,
        left=tuple(left),
    )
