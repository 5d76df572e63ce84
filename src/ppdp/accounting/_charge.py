"""The one charge path: a planned :class:`Charge` and :func:`charge` (check, then spend).

Every publisher, learner, correlated release, federated publisher and the demo plans its
spends as :class:`Charge` objects from its parameters alone, calls :func:`check_charges`
before it reads the data, then :func:`charge` after the data validated and before any
noise is drawn (DESIGN.md contract 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from ppdp.accounting._accountant import Accountant
from ppdp.accounting._claim import Lease, holds_lease, take_lease
from ppdp.accounting._tally import SpendRecord, check_relation
from ppdp.accounting.events import Composed, PrivacyEvent, as_event
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "Charge",
    "charge",
    "charge_keys",
    "check_charges",
    "claim_key",
    "record_keyed_release",
    "refuse_recorded_release",
    "refuse_released_retry",
]


@dataclass(frozen=True)
class Charge:
    """One planned ledger entry: the events it charges and a mechanism name.

    Parameters
    ----------
    events : PrivacyEvent, sequence of PrivacyEvent, or PrivacyBudget
        What the entry costs (several events are composed; a bare budget is recorded as
        an :class:`~ppdp.accounting.events.EpsilonDelta` event). Normalised to a tuple.
    mechanism : str
        The name recorded in the ledger.
    details : dict, optional
        Extra JSON-safe facts kept beside the event (the query, a session id, ...).

    Examples
    --------
    >>> from ppdp.accounting.events import Laplace
    >>> Charge(Laplace(l1_sensitivity=1.0, scale=4.0), "counts").budget
    PrivacyBudget(epsilon=0.25, delta=0.0)
    """

    events: tuple[PrivacyEvent, ...]
    mechanism: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ev: Any = self.events
        if isinstance(ev, PrivacyEvent):
            ev = (ev,)
        elif isinstance(ev, PrivacyBudget):
            ev = (as_event(ev),)
        elif isinstance(ev, Sequence) and not isinstance(ev, str | bytes):
            ev = tuple(ev)
            if not ev or not all(isinstance(e, PrivacyEvent) for e in ev):
                raise ParameterTypeError(
                    f"events ({self.events!r}) must be a non-empty sequence of "
                    "ppdp.accounting.events events"
                )
        else:
            raise ParameterTypeError(
                f"events ({self.events!r}) must be a ppdp.accounting.events event, a sequence "
                "of them, or a PrivacyBudget"
            )
        object.__setattr__(self, "events", ev)
        if not isinstance(self.mechanism, str) or not self.mechanism.strip():
            raise ParameterError(f"mechanism ({self.mechanism!r}) must be a non-empty string")
        if not isinstance(self.details, dict):
            raise ParameterTypeError(f"details ({self.details!r}) must be a dict")

    @property
    def event(self) -> PrivacyEvent:
        """The single event recorded (the composition of :attr:`events` when several)."""
        return self.events[0] if len(self.events) == 1 else Composed(events=self.events)

    @property
    def budget(self) -> PrivacyBudget:
        """The (ε, δ) of the entry under basic composition."""
        return self.event.budget()


def _as_charges(charges: Charge | Iterable[Charge]) -> list[Charge]:
    out = [charges] if isinstance(charges, Charge) else list(charges)
    for c in out:
        if not isinstance(c, Charge):
            raise ParameterTypeError(f"charges holds {c!r}, not a ppdp.accounting.Charge")
    return out


def charge_keys(n: int, idempotency_key: str | None) -> list[str | None]:
    """The key of each of ``n`` entries: the key itself for one, ``key#i`` for several."""
    if idempotency_key is None:
        return [None] * n
    if not isinstance(idempotency_key, str) or not idempotency_key:
        raise ParameterError(
            f"idempotency_key ({idempotency_key!r}) must be None or a non-empty string"
        )
    return [idempotency_key] if n == 1 else [f"{idempotency_key}#{i}" for i in range(1, n + 1)]


class claim_key:  # noqa: N801 - used as a function: ``with claim_key(acct, key):``
    """Hold ``idempotency_key`` exclusively from the release's checks until it is recorded.

    Every keyed release runs inside one claim: the "already released?" decision
    (:func:`refuse_recorded_release`, also inside :func:`check_charges`), the charge, the
    release and :func:`record_keyed_release`. So exactly one run releases per key whatever
    the interleaving: a concurrent copy is refused in one line
    (:class:`~ppdp.exceptions.KeyInUseError`, naming the holder's pid, host and start),
    nothing charged, nothing released. Once acquired, a key whose release is recorded is
    refused as before; a key charged but not recorded belonged to a run that died (it no
    longer holds the claim), so this retry releases, charged nothing again.

    The claim is a kernel advisory lock on a file beside the ledger
    (``.<ledger>.claims/``): given up when the block ends, normally or by an exception, and
    by the kernel when the process dies. In-memory ledgers use a lock within the process.
    Re-entrant for the thread that holds it (a CLI flow holds it around ``fit``, which
    claims again). ``accountant`` None (or not an Accountant) or ``idempotency_key`` None:
    nothing is claimed.

    Also usable without ``with``: :meth:`acquire`, then :meth:`release` in a ``finally``.

    Raises
    ------
    KeyInUseError
        Another run (process or thread) holds the key.
    ParameterError
        The key is not a non-empty string, or its release is recorded.
    LedgerIOError
        The claim file beside the ledger cannot be created.
    """

    def __init__(self, accountant: Accountant | None, idempotency_key: str | None) -> None:
        self._accountant = accountant if isinstance(accountant, Accountant) else None
        self._key = idempotency_key
        self._lease: Lease | None = None

    def acquire(self) -> None:
        """Take the claim and refuse a key whose release is recorded (nothing charged)."""
        if self._accountant is None or self._key is None:
            return
        charge_keys(1, self._key)  # a non-empty string, or one line
        if self._lease is not None:
            raise ParameterError(f"idempotency_key ({self._key!r}) is already claimed here")
        lease = take_lease(self._accountant.ledger, self._key)
        try:
            refuse_recorded_release(self._accountant, self._key)
        except BaseException:
            lease.release()
            raise
        self._lease = lease

    def release(self) -> None:
        """Give the claim up (nothing if it was not taken)."""
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()

    def __enter__(self) -> claim_key:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _require_claim(accountant: Accountant, idempotency_key: str) -> None:
    """A keyed check or record outside :class:`claim_key` would reopen the concurrent race."""
    if not holds_lease(accountant.ledger, idempotency_key):
        raise ParameterError(
            f"idempotency_key ({idempotency_key!r}) is not claimed: a keyed release runs "
            "inside `with ppdp.accounting.claim_key(accountant, idempotency_key):` from its "
            "checks to its recorded release; nothing charged, nothing released"
        )


def refuse_released_retry(
    accountant: Accountant | None, idempotency_key: str | None, output: Any
) -> None:
    """Refuse a retry whose key is already charged while its output exists (one line).

    The earlier run's release then left the process: releasing again with fresh noise
    under the one recorded charge would cost twice (``docs/proofs/ledger.md``).
    """
    if accountant is None or idempotency_key is None:
        return
    record = accountant.charged(idempotency_key) or accountant.charged(f"{idempotency_key}#1")
    if record is not None and Path(output).exists():
        raise ParameterError(
            f"idempotency_key ({idempotency_key!r}) was charged at ledger entry {record.index} "
            f"and its output {output} exists: that release already happened; nothing charged, "
            "nothing released (use a fresh key for a new release)"
        )


def refuse_recorded_release(accountant: Accountant | None, idempotency_key: str | None) -> None:
    """Refuse a retry whose earlier attempt's release is recorded (one line).

    A keyed release records itself (:func:`record_keyed_release`) before it leaves the
    process, so a recorded release happened: releasing again with fresh noise under the
    one recorded charge would cost twice what the ledger says (``docs/proofs/ledger.md``,
    the replay hazard). A charged key whose release is not recorded died between the
    charge and the release: nothing left, so the retry may release, charged nothing again.
    """
    if accountant is None or idempotency_key is None:
        return
    record = accountant.charged(idempotency_key) or accountant.charged(f"{idempotency_key}#1")
    if record is not None and accountant.release_recorded(record):
        raise ParameterError(
            f"idempotency_key ({idempotency_key!r}) was charged at ledger entry {record.index} "
            "and its release is recorded: that release already happened; nothing charged, "
            "nothing released (use a fresh key for a new release)"
        )


def record_keyed_release(
    accountant: Accountant | None,
    records: Sequence[SpendRecord],
    guarantee: Guarantee,
    idempotency_key: str | None,
) -> None:
    """Record a keyed release in the ledger before it leaves the process.

    Linked to its first spend entry, so that a later retry with the same key is refused by
    :func:`refuse_recorded_release` instead of releasing fresh noise under one charge. A
    release without a key needs no record: it can never be retried as the same charge.
    The caller holds :class:`claim_key` from its checks until this returns.
    """
    if accountant is None or idempotency_key is None or not records:
        return
    _require_claim(accountant, idempotency_key)
    accountant.record_release(guarantee, spend=records[0], idempotency_key=idempotency_key)


def check_charges(
    accountant: Accountant | None,
    charges: Charge | Iterable[Charge],
    *,
    mechanism: str,
    idempotency_key: str | None = None,
) -> None:
    """Refuse now (:class:`~ppdp.exceptions.BudgetExceededError`) if the charges do not fit.

    Charges whose idempotency key is already in the ledger are not counted: a retry of a
    charged request needs no new budget, unless its release is recorded (then the retry is
    refused: :func:`refuse_recorded_release`). Nothing is charged. With a key, the caller
    holds :class:`claim_key` (else one line, :class:`~ppdp.exceptions.ParameterError`).
    """
    if accountant is None:
        return
    if idempotency_key is not None:
        charge_keys(1, idempotency_key)
        _require_claim(accountant, idempotency_key)
    refuse_recorded_release(accountant, idempotency_key)
    planned = _as_charges(charges)
    for planned_charge in planned:  # the relation and the unit too, before the data are read
        if "relation" in planned_charge.details:
            check_relation(planned_charge.details["relation"], accountant.relation)
    if planned:
        accountant.check_unit(planned[0].details.get("privacy_unit"))
    keys = charge_keys(len(planned), idempotency_key)
    new = [c for c, k in zip(planned, keys, strict=True) if k is None or not accountant.charged(k)]
    if new:
        events = tuple(e for c in new for e in c.events)
        accountant.check(
            events[0] if len(events) == 1 else Composed(events=events), mechanism=mechanism
        )


def charge(
    accountant: Accountant | None,
    charges: Charge | Iterable[Charge],
    *,
    seeded: bool,
    idempotency_key: str | None = None,
    allow_seeded: bool = False,
) -> tuple[SpendRecord, ...]:
    """Record every charge durably (one ledger entry each), in order; then you may release.

    Parameters
    ----------
    accountant : Accountant or None
        None records nothing (the caller answers for the budget) and returns ``()``.
    charges : Charge or iterable of Charge
    seeded : bool
        Whether the release uses a seeded, reproducible stream (recorded).
    idempotency_key : str, optional
        A key unique to this release request: the entries get it (``key#1``, ``key#2``,
        ... when there are several). A retry with the same key charges nothing again and
        returns the earlier records with ``replayed=True`` (see
        :meth:`Accountant.spend` on the replay hazard).
    allow_seeded : bool
        Must be True for a seeded charge (see :meth:`Accountant.spend`).

    Returns
    -------
    tuple of SpendRecord
    """
    if accountant is None:
        return ()
    planned = _as_charges(charges)
    keys = charge_keys(len(planned), idempotency_key)
    n = len(planned)
    # "i/n" marks the entries of one release, so a report can tell a release from an entry.
    parts = [{"release_part": f"{i}/{n}"} if n > 1 else {} for i in range(1, n + 1)]
    return tuple(
        accountant.spend(
            c.event,
            mechanism=c.mechanism,
            seeded=seeded,
            allow_seeded=allow_seeded,
            idempotency_key=k,
            **c.details,
            **part,
        )
        for c, k, part in zip(planned, keys, parts, strict=True)
    )
