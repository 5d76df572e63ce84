"""The :class:`Accountant`: check, then durably charge, then (the caller) release."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ppdp._validation import check_positive
from ppdp.accounting._tally import (
    SPEND,
    SpendRecord,
    Tally,
    accountant_metadata,
    check_composition,
    check_relation,
    dec,
    read_accountant_metadata,
    read_composition,
)
from ppdp.accounting.events import PrivacyEvent, as_event
from ppdp.budget import (
    Guarantee,
    Neighbouring,
    PrivacyBudget,
    budget_number,
    remaining_number,
)
from ppdp.exceptions import (
    BudgetExceededError,
    LedgerIntegrityError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.ledger import (
    Anchor,
    AnchorLike,
    AnchorRegistry,
    CheckpointLike,
    Entry,
    Ledger,
    LedgerExistsError,
    Signer,
    generate_key,
    json_safe,
    load_private_key,
    refuse_non_ledger,
    save_private_key,
)

__all__ = ["Accountant", "KeyLike", "key_path_for"]

logger = logging.getLogger(__name__)

KeyLike = Signer | Ed25519PrivateKey | str | os.PathLike[str]
#: What may be charged: a typed event, several (composed), or a bare (ε, δ).
Cost = PrivacyEvent | Sequence[PrivacyEvent] | PrivacyBudget
_RESERVED_EVENTS = {"genesis", SPEND, "revoke", "add-signer"}
_MAX_KEY_LEN = 256


def key_path_for(path: str | os.PathLike[str]) -> Path:
    """Where the single custodian's signing key lives by default: ``<ledger>.key``."""
    p = Path(path)
    return p.with_name(p.name + ".key")


class Accountant:
    """A dataset's privacy budget, enforced by basic composition and kept in a signed ledger.

    Every spend is checked against what remains and recorded durably in the ledger
    *before* the caller releases anything (check, then spend, then release). The ledger
    is shared safely between processes: the check and the append happen under the
    ledger's write lock, after reading what other processes spent.

    Use :meth:`open` (a ledger file) or :meth:`in_memory` (experiments).

    Guarantee
    ---------
    If every release charged here is (ε_i, δ_i)-DP under the ledger's neighbouring
    relation, all of them together are (Σε_i, Σδ_i)-DP for that relation (basic
    composition; Dwork & Roth 2014, Thm 3.16), and the accountant keeps Σε_i ≤ ε_total and
    Σδ_i ≤ δ_total, in exact decimal arithmetic on the values' shortest reprs (see
    ``docs/proofs/ledger.md`` for the half-ulp caveat). The guarantee is only as good as
    the ε, δ and relation each caller states; every event is stored in full so a tighter
    accountant can recompute the totals later.

    References
    ----------
    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.

    Examples
    --------
    >>> from ppdp import PrivacyBudget
    >>> acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    >>> rec = acct.spend(PrivacyBudget(0.25), mechanism="laplace", sensitivity=1.0)
    >>> acct.remaining
    PrivacyBudget(epsilon=0.75, delta=0.0)
    >>> acct.would_exceed(PrivacyBudget(0.8))
    True
    """

    def __init__(self, ledger: Ledger, *, _owns_ledger: bool = True) -> None:
        total, relation = read_accountant_metadata(ledger.metadata)
        self._ledger = ledger
        self._tally = Tally(total, relation, read_composition(ledger.metadata))
        self._lock = threading.RLock()
        self._owns = _owns_ledger
        self._broken: LedgerIntegrityError | None = None
        self._on_invalid = "raise"
        self._fold(ledger.entries(refresh=False))

    # -- construction -------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        dataset_id: str,
        total: PrivacyBudget,
        relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
        key: KeyLike | None = None,
        checkpoint: CheckpointLike | None = None,
        busy_timeout: float = 60.0,
        anchor: AnchorLike | None = None,
        composition: str | None = None,
    ) -> Accountant:
        """Open the budget ledger at ``path``, creating it on first use.

        Parameters
        ----------
        path : path
            The ledger file. Created (with ``dataset_id``, ``total`` and ``relation`` pinned
            in its genesis entry) if absent; otherwise verified completely before use.
        dataset_id : str
            Must equal the ledger's dataset id.
        total : PrivacyBudget
            The dataset's whole budget. Must equal the one pinned in the ledger: a budget
            is never changed by reopening (start a new ledger to change it, knowingly).
        relation : Neighbouring or str
            The neighbouring relation every charged guarantee must hold for.
        key : Signer, Ed25519PrivateKey or path to a PEM key, optional
            The custodian's signing key. Default: ``<path>.key``, created (mode 0600) when
            the ledger is created.
        checkpoint : Checkpoint or path, optional
            A checkpoint kept elsewhere; the ledger must extend it.
        busy_timeout : float
            Seconds to wait for another process's write lock.
        anchor : Anchor, its text, or a file holding it, optional
            An anchor kept elsewhere (``ppdp ledger anchor``): the ledger must be the
            anchored one and extend it. With an anchor, a missing ledger is never created
            afresh. The anchor on record for ``dataset_id`` in
            :meth:`ppdp.ledger.AnchorRegistry.default` is checked too, and a new ledger for
            a dataset with one on record is refused.
        composition : {"basic", "pld", "rdp"}, optional
            How spends compose (default: the composition pinned in an existing ledger,
            ``"basic"`` for a new one): ``"basic"`` adds ε and δ; ``"pld"`` (privacy loss
            distributions) and ``"rdp"`` (Rényi DP) compose the typed events tightly with
            ``dp-accounting`` (``pip install 'ppdp[tight]'``), and then ``total`` is an
            (ε, δ) target with δ > 0: a spend is refused if the composed ε at that δ would
            exceed it. Pinned in the genesis entry; it can never change (a ledger written
            before compositions existed is ``"basic"``).

        Raises
        ------
        ParameterError
            ``dataset_id``, ``total``, ``relation`` or ``composition`` differ from the
            ledger's, or no key.
        LedgerIntegrityError
            The ledger fails verification (nothing is read from it), or it is missing while
            an anchor of it exists.
        """
        path = Path(path)
        if not isinstance(dataset_id, str) or not dataset_id:
            raise ParameterError(f"dataset_id ({dataset_id!r}) must be a non-empty string")
        total = _check_budget("total", total)
        relation = Neighbouring.parse(relation)
        requested = composition
        composition = check_composition("basic" if composition is None else composition, total)
        timeout = check_positive("busy_timeout", busy_timeout)
        if composition != "basic":
            from ppdp.accounting._tight import _import

            _import()  # the install hint before anything is created
        registry = AnchorRegistry.default()
        ledger: Ledger | None = None
        if not path.exists():
            _refuse_creation(path, dataset_id, anchor, registry)
            signer = _resolve_key(path, key, create=True)
            try:
                ledger = Ledger.create(
                    path,
                    signer=signer,
                    dataset_id=dataset_id,
                    purpose="privacy budget",
                    metadata=accountant_metadata(total, relation, composition),
                    busy_timeout=timeout,
                    anchor_registry=registry,
                )
                logger.info(
                    "created budget ledger %s for dataset %r (total %s, %s)",
                    path,
                    dataset_id,
                    total,
                    relation.value,
                )
            except LedgerExistsError:  # another process created it first
                ledger = None
        if ledger is None:
            _check_ledger_path(path, checkpoint, anchor)
            signer_or_key = _resolve_key(path, key, create=False)
            ledger = Ledger.open(
                path,
                signer=signer_or_key,
                checkpoint=checkpoint,
                busy_timeout=timeout,
                anchor=anchor,
                anchor_registry=registry,
            )
        try:
            _check_matches(
                ledger, dataset_id, total, relation, None if requested is None else composition
            )
            return cls(ledger)
        except BaseException:
            ledger.close()
            raise

    @classmethod
    def open_existing(
        cls,
        path: str | os.PathLike[str],
        *,
        key: KeyLike | None = None,
        checkpoint: CheckpointLike | None = None,
        busy_timeout: float = 60.0,
        anchor: AnchorLike | None = None,
    ) -> Accountant:
        """Open an existing budget ledger with the dataset id, total and relation it pins.

        For tools (the CLI) that act on a ledger someone else created. The ledger is
        verified completely first (against ``anchor`` if given, and the anchor on record
        for its dataset id); nothing is created.

        Raises
        ------
        FileNotFoundError
            No ledger at ``path``.
        ParameterError
            The file is not a privacy-budget ledger, or no signing key.
        LedgerIntegrityError
            The ledger fails verification.
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(
                f"ledger ({path}) does not exist; create it with Accountant.open(path, "
                "dataset_id=..., total=...)"
            )
        timeout = check_positive("busy_timeout", busy_timeout)
        _check_ledger_path(path, checkpoint, anchor)
        signer_or_key = _resolve_key(path, key, create=False)
        ledger = Ledger.open(
            path,
            signer=signer_or_key,
            checkpoint=checkpoint,
            busy_timeout=timeout,
            anchor=anchor,
            anchor_registry=AnchorRegistry.default(),
        )
        try:
            read_accountant_metadata(ledger.metadata)
            return cls(ledger)
        except BaseException:
            ledger.close()
            raise

    @classmethod
    def in_memory(
        cls,
        *,
        dataset_id: str = "in-memory",
        total: PrivacyBudget,
        relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
        composition: str = "basic",
    ) -> Accountant:
        """An accountant on an in-memory ledger (same rules; nothing persists)."""
        total = _check_budget("total", total)
        relation = Neighbouring.parse(relation)
        composition = check_composition(composition, total)
        ledger = Ledger.in_memory(
            signer=Signer.generate("custodian"),
            dataset_id=dataset_id,
            purpose="privacy budget",
            metadata=accountant_metadata(total, relation, composition),
        )
        return cls(ledger)

    # -- state --------------------------------------------------------------------------

    @property
    def ledger(self) -> Ledger:
        """The underlying ledger."""
        return self._ledger

    @property
    def path(self) -> Path | None:
        """The ledger file (None in memory)."""
        return self._ledger.path

    @property
    def dataset_id(self) -> str:
        """The dataset this budget belongs to."""
        return self._ledger.dataset_id

    @property
    def relation(self) -> Neighbouring:
        """The neighbouring relation of every charge."""
        return self._tally.relation

    @property
    def privacy_unit(self) -> str | None:
        """The unit this ledger's spends protect: the privacy unit's id column, or None for
        single rows (None too before the first spend, which pins it)."""
        with self._lock:
            self._refresh()
            return ledger_unit(self._tally.records)

    def check_unit(self, unit: Any) -> None:
        """Refuse (one line, nothing charged) a charge whose ``privacy_unit`` detail names
        another unit than this ledger's spends: ε per row and ε per person do not add up."""
        with self._lock:
            self._refresh()
            check_unit(unit, self._tally.records, self.path)

    @property
    def composition(self) -> str:
        """How spends compose: ``"basic"``, ``"pld"`` or ``"rdp"`` (pinned in the ledger)."""
        return self._tally.composition

    @property
    def on_invalid(self) -> str:
        """How releases through this accountant treat invalid *values* in the data.

        ``"raise"`` (default, for a custodian who sees every error): a value-dependent
        problem (an undeclared category, a missing value, a label outside the declared
        classes, wrong declared class counts) is an error naming the column and a count,
        and nothing is spent. ``"mask"`` (total mode, for analyst-facing services where
        whoever chooses the schema or the parameters reads the errors): no value-dependent
        condition raises; each bad value is mapped to a declared one and the counts go to
        the custodian log only (``docs/guide.md``, *Who sees what*). Set it on the
        custodian's side: it is never read from a schema or a release's parameters.
        """
        return self._on_invalid

    @on_invalid.setter
    def on_invalid(self, value: str) -> None:
        if value not in ("raise", "mask"):
            raise ParameterError(f"on_invalid ({value!r}) must be 'raise' or 'mask'")
        self._on_invalid = value

    @property
    def total(self) -> PrivacyBudget:
        """The whole budget pinned in the ledger."""
        return self._tally.total

    @property
    def spent(self) -> PrivacyBudget:
        """Total charged so far, including other processes' spends."""
        with self._lock:
            self._refresh()
            return self._tally.spent

    @property
    def remaining(self) -> PrivacyBudget:
        """Budget left (basic: rounded down, so spending exactly this always fits).

        Under ``"pld"`` / ``"rdp"``: the ε headroom at the total's δ (not additive; ask
        :meth:`would_exceed` or :meth:`fits_count` about a given event).
        """
        with self._lock:
            self._refresh()
            return self._tally.remaining

    @property
    def guarantee(self) -> Guarantee:
        """What every release charged here promises together, under the ledger's composition.

        Basic: (Σε, Σδ)-DP. PLD / RDP: (composed ε, target δ)-DP, or the basic bound when
        smaller (``docs/proofs/composition.md``). Pufferfish charges (basic ledgers only)
        are bookkeeping: the assumptions say so.
        """
        with self._lock:
            self._refresh()
            t = self._tally
            spent, records = t.spent, list(t.records)
        assumptions = [
            f"every charge's own guarantee holds under {self.relation.value}",
            f"{len(records)} charges composed by {self.composition} composition",
        ]
        if any(leaf.kind == "pufferfish" for r in records if r.event for leaf in r.event.leaves()):
            assumptions.append(
                "Pufferfish charges are included as their stated ε: Pufferfish has no "
                "composition theorem, so for those releases the total is bookkeeping"
            )
        return Guarantee.approx(
            spent.epsilon,
            spent.delta,
            relation=self.relation,
            mechanism=f"everything charged to dataset {self.dataset_id!r}",
            assumptions=tuple(assumptions),
            details={"composition": self.composition, "charges": len(records)},
        )

    def would_exceed(self, budget: Cost) -> bool:
        """Whether charging ``budget`` (or events) now would overrun the total (nothing charged)."""
        event = _check_cost("budget", budget)
        with self._lock:
            self._refresh()
            return not self._tally.fits(event)

    def remaining_after(self, budget: Cost) -> PrivacyBudget | None:
        """What :attr:`remaining` would be once ``budget`` (or events) is charged; None if it
        does not fit. Under ``"pld"`` / ``"rdp"`` the event is composed, not subtracted.
        Nothing is charged.
        """
        event = _check_cost("budget", budget)
        with self._lock:
            self._refresh()
            return self._tally.remaining_after(event)

    def fits_count(self, budget: Cost, *, limit: int = 100_000) -> int:
        """How many more releases costing ``budget`` fit now (at most ``limit``)."""
        event = _check_cost("budget", budget)
        with self._lock:
            self._refresh()
            return self._tally.fits_count(event, limit=limit)

    def check(self, budget: Cost, *, mechanism: str = "release") -> None:
        """Raise :class:`BudgetExceededError` now if ``budget`` does not fit; charge nothing.

        Pipelines call this before they read or validate the data, then validate, then
        :meth:`spend` (which checks again atomically), then release: so a request that
        cannot be afforded never touches the data, and data that fail validation never
        cost budget.
        """
        event = _check_cost("budget", budget)
        with self._lock:
            self._refresh()
            if not self._tally.fits(event):
                raise self._exceeded(event, mechanism)

    def charged(self, idempotency_key: str) -> SpendRecord | None:
        """The spend recorded with ``idempotency_key``, or None (nothing is charged)."""
        with self._lock:
            self._refresh()
            return self._tally.by_key.get(idempotency_key)

    def history(self) -> list[SpendRecord]:
        """Every charged spend, in ledger order."""
        with self._lock:
            self._refresh()
            return list(self._tally.records)

    def events(self, kind: str | None = None) -> list[Entry]:
        """Every ledger entry (or those of one ``kind``), verified."""
        with self._lock:
            self._refresh()
            entries = self._ledger.entries(refresh=False)
        return [e for e in entries if kind is None or e.kind == kind]

    def __repr__(self) -> str:
        where = self.path if self.path is not None else ":memory:"
        t = self._tally
        return (
            f"Accountant({where}, dataset={self.dataset_id!r}, total={t.total}, "
            f"spent={t.spent}, relation={t.relation.value})"
        )

    # -- charging -----------------------------------------------------------------------

    def spend(
        self,
        budget: Cost,
        *,
        mechanism: str,
        idempotency_key: str | None = None,
        seeded: bool = False,
        allow_seeded: bool = False,
        **details: Any,
    ) -> SpendRecord:
        """Check ``budget`` against what remains and record it durably; then you may release.

        Under the ledger's write lock: read what every process has spent, refuse if
        ``spent + budget`` would exceed the total, else append a signed ``spend`` entry
        holding the whole event and commit it (fsync) before returning. If this returns,
        the budget is charged even if the release later fails (fail closed).

        Parameters
        ----------
        budget : PrivacyEvent, sequence of PrivacyEvent, or PrivacyBudget
            What the release costs: its typed event(s) (:mod:`ppdp.accounting.events`;
            several are composed), or a bare (ε, δ) with ε > 0 (recorded as an
            :class:`~ppdp.accounting.events.EpsilonDelta` event). The ledger stores the
            canonical event.
        mechanism : str
            Name of the mechanism or pipeline.
        idempotency_key : str, optional
            A key unique to this release request. If a spend with this key is already in
            the ledger (say the caller was killed after the commit, before it saw the
            result), that record is returned with ``replayed=True`` and nothing is charged
            again. The earlier attempt may already have released: see
            :attr:`SpendRecord.replayed` and :meth:`release_recorded`.
        seeded : bool
            True when the release uses a seeded, reproducible stream (recorded).
        allow_seeded : bool
            Must be True for a seeded spend: the same seed on neighbouring tables cancels
            the noise exactly, so a seeded release is charged only when the caller says it
            is an experiment. Recorded in the details (``allow_seeded: true``).
        **details
            The rest of the event, JSON-safe (numpy scalars and arrays are converted; NaN
            and inf are refused): sensitivity, noise scale, granularity, query, ...
            A ``relation`` detail must equal the ledger's relation.

        Returns
        -------
        SpendRecord

        Raises
        ------
        BudgetExceededError
            The spend does not fit; nothing is recorded. ``remaining`` holds what is left.
        ParameterError, ParameterTypeError
            Invalid input; raised before anything is recorded.
        LedgerIntegrityError
            The ledger failed verification; nothing is charged and nothing may be released.
        """
        if isinstance(budget, PrivacyBudget):
            check_positive("epsilon", budget.epsilon)
        event = _check_cost("budget", budget)
        if not isinstance(mechanism, str) or not mechanism.strip():
            raise ParameterError(f"mechanism ({mechanism!r}) must be a non-empty string")
        if idempotency_key is not None and (
            not isinstance(idempotency_key, str) or not 0 < len(idempotency_key) <= _MAX_KEY_LEN
        ):
            raise ParameterError(
                f"idempotency_key ({idempotency_key!r}) must be None or a non-empty string of at "
                f"most {_MAX_KEY_LEN} characters"
            )
        seeded = _check_bool("seeded", seeded)
        allow_seeded = _check_bool("allow_seeded", allow_seeded)
        if seeded and not allow_seeded:
            raise ParameterError(
                "seeded (True) needs allow_seeded=True: the same seed on neighbouring tables "
                "cancels the noise exactly, so a seeded release is charged only as an explicit "
                "experiment; nothing was charged"
            )
        if seeded:
            details = {**details, "allow_seeded": True}
        if "relation" in details:
            check_relation(details.pop("relation"), self.relation)
        charge = self._tally.charge_for(event)  # UnsupportedEventError before anything
        payload = {
            "mechanism": mechanism,
            "epsilon": charge.epsilon,
            "delta": charge.delta,
            "relation": self.relation.value,
            "seeded": seeded,
            "idempotency_key": idempotency_key,
            "details": json_safe(details, name="details"),
            "composition": self.composition,
            "event": event.to_dict(),
        }
        with self._lock:
            self._check_usable()
            with self._ledger.transaction() as txn:
                self._fold(txn.entries(self._tally.folded))
                if idempotency_key is not None and idempotency_key in self._tally.by_key:
                    return self._replayed(self._tally.by_key[idempotency_key], event, mechanism)
                check_unit(details.get("privacy_unit"), self._tally.records, self.path)
                if not self._tally.fits(event):
                    raise self._exceeded(event, mechanism)
                entry = txn.append(SPEND, payload)
            # The checkpoint step after the commit may already have read later entries of
            # other processes, so look the record up by its index.
            self._fold(self._ledger.entries(self._tally.folded, refresh=False))
            record = next(r for r in reversed(self._tally.records) if r.index == entry.index)
        logger.info(
            "charged %s to dataset %r (%s, ledger entry %d)",
            event.describe(),
            self.dataset_id,
            mechanism,
            record.index,
        )
        return record

    def append_event(self, kind: str, payload: Mapping[str, Any]) -> Entry:
        """Record a non-spend event (a release's guarantee, an output path, a note).

        ``kind`` may not be ``spend``, ``genesis``, ``revoke`` or ``add-signer``. The
        payload is converted with :func:`ppdp.ledger.json_safe`.
        """
        if kind in _RESERVED_EVENTS:
            raise ParameterError(
                f"kind ({kind!r}) is reserved; use spend() for charges, and the Ledger for keys"
            )
        safe = json_safe(payload, name="payload")
        if not isinstance(safe, dict):
            raise ParameterTypeError(f"payload ({payload!r}) must be a mapping")
        with self._lock:
            self._check_usable()
            entry = self._ledger.append(kind, safe)
            self._refresh()
        return entry

    def record_release(
        self,
        guarantee: Guarantee,
        *,
        spend: SpendRecord | None = None,
        **details: Any,
    ) -> Entry:
        """Record what a release promises (kind ``release``), linked to its spend entry."""
        if not isinstance(guarantee, Guarantee):
            raise ParameterTypeError(f"guarantee ({guarantee!r}) must be a Guarantee")
        if spend is not None and not isinstance(spend, SpendRecord):
            raise ParameterTypeError(f"spend ({spend!r}) must be a SpendRecord or None")
        return self.append_event(
            "release",
            {
                "guarantee": guarantee.to_dict(),
                "spend_index": None if spend is None else spend.index,
                "details": details,
            },
        )

    def release_recorded(self, spend: SpendRecord) -> bool:
        """Whether a ``release`` entry linked to ``spend`` is in the ledger.

        Use it after a replayed idempotent spend: if the release was recorded, it happened.
        (If it was not, the release may still have left before a crash; only the caller
        can tell, e.g. from its output file.)
        """
        if not isinstance(spend, SpendRecord):
            raise ParameterTypeError(f"spend ({spend!r}) must be a SpendRecord")
        return any(e.payload.get("spend_index") == spend.index for e in self.events("release"))

    def close(self) -> None:
        """Close the ledger."""
        if self._owns:
            self._ledger.close()

    def __enter__(self) -> Accountant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise self._broken

    def _fold(self, entries: list[Entry]) -> None:
        try:
            self._tally.fold(entries)
        except LedgerIntegrityError as exc:
            self._broken = exc
            raise

    def _refresh(self) -> None:
        self._check_usable()
        self._ledger.refresh()
        self._fold(self._ledger.entries(self._tally.folded, refresh=False))

    def _replayed(self, record: SpendRecord, event: PrivacyEvent, mechanism: str) -> SpendRecord:
        assert record.event is not None
        if record.event.to_dict() != event.to_dict() or record.mechanism != mechanism:
            raise ParameterError(
                f"idempotency_key ({record.idempotency_key!r}) was already used at ledger entry "
                f"{record.index} for a different spend ({record.mechanism}, {record.budget}); "
                "use a fresh key for a new release"
            )
        logger.info("idempotent retry of ledger entry %d: nothing charged", record.index)
        return dataclasses.replace(record, replayed=True)

    def _exceeded(self, event: PrivacyEvent, mechanism: str) -> BudgetExceededError:
        t = self._tally
        remaining = t.remaining
        where = (
            f"Accountant.remaining or `ppdp budget show {self.path}`"
            if self.path is not None
            else "Accountant.remaining"
        )
        if t.tight:
            cost = f"{event.describe()}"
            try:
                requested = event.budget()
            except Exception:
                requested = PrivacyBudget(t.composed_with(event), t.total.delta)
            detail = (
                f"composed ε at δ={budget_number(t.total.delta)} ({t.composition}) would be "
                f"{_above(t.composed_with(event), t.total.epsilon)} > "
                f"{budget_number(t.total.epsilon)}; "
                f"spent {t.spent} of {t.total}"
            )
        else:
            requested = event.budget()
            cost = str(requested)
            detail = (
                f"spent {t.spent} of {t.total}, remaining "
                f"ε={remaining_number(remaining.epsilon, t.total.epsilon)}, "
                f"δ={remaining_number(remaining.delta, t.total.delta)}"
            )
            if requested.epsilon <= remaining.epsilon and requested.delta > remaining.delta:
                detail += "; the ε fits, the δ does not" + (
                    " (this budget's total δ is 0, pure ε-DP: a release with δ > 0 needs "
                    "a budget with a δ, e.g. `ppdp budget init LEDGER --delta 1e-6 ...`)"
                    if t.total.delta == 0
                    else ""
                )
        return BudgetExceededError(
            f"spend of {cost} for {mechanism!r} would exceed the budget of dataset "
            f"{self.dataset_id!r}: {detail}; nothing was charged. "
            f"Query what remains with {where}.",
            remaining=remaining,
            requested=requested,
        )


def _check_budget(name: str, value: object) -> PrivacyBudget:
    if not isinstance(value, PrivacyBudget):
        raise ParameterTypeError(
            f"{name} ({value!r}) must be a PrivacyBudget, not {type(value).__name__}; "
            "write PrivacyBudget(epsilon, delta)"
        )
    return value


def _check_cost(name: str, value: object) -> PrivacyEvent:
    if not isinstance(value, PrivacyEvent | PrivacyBudget | list | tuple):
        raise ParameterTypeError(
            f"{name} ({value!r}) must be a PrivacyBudget or ppdp.accounting.events event(s), "
            f"not {type(value).__name__}; write PrivacyBudget(epsilon, delta)"
        )
    return as_event(value)  # type: ignore[arg-type]


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ParameterTypeError(f"{name} ({value!r}) must be a bool, not {type(value).__name__}")
    return bool(value)


def _above(value: float, limit: float) -> str:
    """``value`` with 6 significant digits, or in full where those would not exceed ``limit``."""
    short = f"{value:.6g}"
    return short if float(short) > limit else repr(value)


def _check_matches(
    ledger: Ledger,
    dataset_id: str,
    total: PrivacyBudget,
    relation: Neighbouring,
    composition: str | None = "basic",
) -> None:
    pinned_total, pinned_relation = read_accountant_metadata(ledger.metadata)
    if ledger.dataset_id != dataset_id:
        raise ParameterError(
            f"dataset_id ({dataset_id!r}) differs from the ledger's dataset "
            f"({ledger.dataset_id!r}) at {ledger.path}; use that dataset's own ledger"
        )
    if dec(pinned_total.epsilon) != dec(total.epsilon) or dec(pinned_total.delta) != dec(
        total.delta
    ):
        raise ParameterError(
            f"total ({total}) differs from the budget pinned in the ledger ({pinned_total}) at "
            f"{ledger.path}; a dataset's budget is never changed by reopening its ledger"
        )
    if pinned_relation is not relation:
        raise ParameterError(
            f"relation ({relation.value!r}) differs from the ledger's relation "
            f"({pinned_relation.value!r}) at {ledger.path}"
        )
    pinned_composition = read_composition(ledger.metadata)
    if composition is not None and pinned_composition != composition:
        raise ParameterError(
            f"composition ({composition!r}) differs from the composition pinned in the ledger "
            f"({pinned_composition!r}) at {ledger.path}; a ledger's composition never changes"
        )


def _refuse_creation(
    path: Path, dataset_id: str, anchor: AnchorLike | None, registry: AnchorRegistry
) -> None:
    """A ledger that has an anchor (given, or on record) is never created afresh."""
    if anchor is not None:
        found, source = Anchor.load(anchor)
        if found.dataset_id != dataset_id:
            raise ParameterError(
                f"anchor (of dataset {found.dataset_id!r}) is not of dataset_id ({dataset_id!r})"
            )
        raise LedgerIntegrityError(
            f"entry 0: ledger {path} does not exist, but {source} records its ledger "
            f"{found.ledger_id} with {found.length} entries: it was deleted or moved; refusing "
            "to create a new one (that would reset the budget): restore the anchored ledger",
            index=0,
        )
    registry.refuse_new_ledger(dataset_id, path)


def _check_ledger_path(path: Path, checkpoint: Any, anchor: Any) -> None:
    """Refuse a folder or a file that is plainly not a ledger before looking for its key:
    a wrong path (a CSV given as ``--ledger``) is told as such, not as a missing key."""
    if path.is_dir():
        raise ParameterError(f"ledger ({path}) is a folder, not a ledger file")
    refuse_non_ledger(path, explicit=checkpoint is not None or anchor is not None, name="ledger")


def _resolve_key(path: Path, key: KeyLike | None, *, create: bool) -> Signer | Ed25519PrivateKey:
    """The custodian's key: given, or ``<path>.key`` (created on first use)."""
    if isinstance(key, Signer):
        return key
    if isinstance(key, Ed25519PrivateKey):
        return _as_signer(key, create)
    if key is not None:
        if not isinstance(key, str | os.PathLike):
            raise ParameterTypeError(
                f"key ({key!r}) must be a Signer, an Ed25519PrivateKey or a path to a PEM key"
            )
        return _as_signer(load_private_key(key), create)
    key_file = key_path_for(path)
    if key_file.exists():
        return _as_signer(_load_when_complete(key_file), create)
    if not create:
        raise ParameterError(
            f"key (None): the signing key {key_file} of ledger {path} is missing; pass key="
        )
    try:
        save_private_key(generate_key(), key_file)
        logger.info("created signing key %s (mode 0600)", key_file)
    except ParameterError:  # created by a concurrent process
        pass
    return _as_signer(_load_when_complete(key_file), create)


def _as_signer(private_key: Ed25519PrivateKey, create: bool) -> Signer | Ed25519PrivateKey:
    # A new ledger pins the key as "custodian"; an existing one finds its id by public key.
    return Signer("custodian", private_key) if create else private_key


def _load_when_complete(key_file: Path, *, wait: float = 5.0) -> Ed25519PrivateKey:
    """Load a key file another process may be writing at this very moment."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return load_private_key(key_file)
        except ParameterError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _unit_column(unit: Any) -> str | None:
    """The id column of a ``privacy_unit`` detail (None: single rows)."""
    if isinstance(unit, Mapping):
        column = unit.get("column")
        return column if isinstance(column, str) else None
    return None


def ledger_unit(records: Sequence[SpendRecord]) -> str | None:
    """The unit of a ledger's spends: its first spend's (None: single rows, or no spend)."""
    for record in records:
        return _unit_column(record.details.get("privacy_unit"))
    return None


def check_unit(unit: Any, records: Sequence[SpendRecord], path: Any) -> None:
    """A charge's privacy unit must be the one of the ledger's spends (after the first)."""
    if not records:
        return
    have, want = ledger_unit(records), _unit_column(unit)
    if have == want:
        return

    def name(column: str | None) -> str:
        return "single rows" if column is None else f"persons of column {column!r}"

    where = f" at {path}" if path is not None else ""
    raise ParameterError(
        f"privacy unit ({name(want)}) differs from the unit this ledger's spends protect "
        f"({name(have)}){where}; budgets per row and per person do not add up: use a ledger "
        "for that unit"
    )
