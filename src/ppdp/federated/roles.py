"""The three roles of a Mul-LDA-DP round as transport-agnostic state machines.

Each role has ``start() -> list[Message]``, ``handle(message) -> list[Message]`` (the
messages to send, each addressed by ``recipient``), ``state`` and ``abort(reason)``. No I/O
happens inside except the publisher's ledger/accountant and the owners' replicas. The
in-process router :func:`ppdp.federated.simulate_round` and the HTTP transport
(:mod:`ppdp.federated.http`) drive the very same objects.

Protocol (``docs/federated.md``)::

    publisher: check the budget (nothing spent) ── round-start, ledger-entries ──▶ owners
                                                ── round-start ──▶ dealer
    dealer:    dealer-share (that owner's zero-sum masks) ──▶ each owner   [dealer="trusted"]
    owners:    key-share (X25519 public key) ──▶ every other owner        [dealer="none"]
    owners:    compute both shares, commitment (their salted digests) ──▶ publisher
    publisher: once every owner's commitment is in: SPEND the whole budget (ledger)
               ── ledger-entries ──▶ owners
    owners:    verify the spend in their replica, then mean-share ──▶ publisher
    publisher: Σ shares = noisy class sums (masks cancel exactly) ── noisy-means ──▶ owners
    owners:    scatter-share (upper Σxxᵀ + masks + own noise) ──▶ publisher
    publisher: noisy scatter, ridge, Fisher direction(s) ── result ──▶ owners
    owners:    projections (noisy or raw)  ──▶ publisher        [release != "direction"]
    publisher: release entry in the ledger ── release ──▶ owners, dealer; done.

The charge point is the last commitment: a round that aborts before it spends nothing, and
after it every share is already fixed by its owner's signed commitment (the publisher
refuses a share whose digest differs). The publisher appends to its ledger: the start (a
session id runs once), the spend and the round's config with the owners' commitments
(before any share is requested), the signed *envelope* of every accepted message (header,
payload digest, signature: share values are kept out of the ledger because owners replicate
it and an owner knows part of the masks, see ``docs/proofs/mul-lda-dp.md``), the noisy
statistics and direction(s), the release, or the abort. It forwards every new entry to every owner
(``ledger-entries``); owners verify each entry (chain, signature) and refuse to send a share
until their replica shows the round's spend within the ledger's total.

Message handling, for every role:

* :meth:`check` authenticates a message without changing any state (session, pinned sender
  key, recipient, signature, kind this sender may send to this role, payload fields, shapes,
  NaN/inf). A transport may call it first to answer a refusal. A message that does not
  authenticate (:class:`~ppdp.federated.messages.UnauthenticatedError`: another session, an
  unknown sender, another recipient, a signature that does not verify) is dropped and
  logged; it never aborts a round, so an outsider cannot end one (:func:`must_abort`).
* :meth:`handle` runs :meth:`check`, then the per-sender sequence number: a copy (seq already
  delivered) raises :class:`~ppdp.federated.messages.ReplayError` and is not counted; an early
  message (gap) is held until the gap fills, so the result does not depend on arrival order.
  Messages for a later phase wait for it.
* Any other refusal — an *authenticated* message that breaks the protocol (a kind its
  sender may not send, a second share, a share of the wrong shape, off the grid, with NaN or
  unlike its commitment, a config that differs, a ledger that does not verify) — raises, and
  the caller aborts the round with :meth:`abort` (:func:`must_abort` says which refusals
  abort). Only a holder of a pinned key can cause one; honest parties never do, whatever the
  order of delivery. ``abort`` returns the ``abort`` messages to deliver; nothing is
  released, and spends already recorded stay recorded.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from numpy.typing import ArrayLike, NDArray

from ppdp import noise
from ppdp.accounting import Accountant, Charge, accountant_metadata
from ppdp.accounting.events import Composed, EpsilonDelta, PrivacyEvent, event_from_dict
from ppdp.budget import Guarantee, Neighbouring
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    LedgerIntegrityError,
    NotDifferentiallyPrivateWarning,
    ParameterError,
    ParameterTypeError,
    PPDPError,
    ProtocolError,
    user_stacklevel,
)
from ppdp.federated._wire import FileReplica, MemoryReplica, entry_from_row, entry_to_row
from ppdp.federated.calibration import FederatedPlan, exact_limit
from ppdp.federated.config import RoundConfig
from ppdp.federated.masks import Masks, dealer_masks, pairwise_masks
from ppdp.federated.messages import (
    ArraySpec,
    Kind,
    Message,
    MessageFields,
    MessageValidator,
    OptionalField,
    ReplayError,
    UnauthenticatedError,
    check_payload,
    decode_array,
    encode_array,
    new_salt,
    payload_digest,
    sign,
)
from ppdp.federated.owner_data import OwnerStatistics
from ppdp.ledger import Ledger, Signer, canonical_dumps
from ppdp.mechanisms import LaplaceMechanism
from ppdp.publish.fisher import fisher_directions, from_upper, noisy_scatter, upper
from ppdp.random import RandomSource, RandomState, resolve_random_state
from ppdp.release import ReleaseLedger, ReleaseOptions

__all__ = [
    "ABORTED",
    "DONE",
    "TERMINAL",
    "DataOwner",
    "FederatedPublisher",
    "NoiseDealer",
    "create_publishing_accountant",
    "must_abort",
]

logger = logging.getLogger(__name__)

DONE = "done"
ABORTED = "aborted"
TERMINAL = (DONE, ABORTED)
_START_KIND = "fed-start"
_ROUND_KIND = "fed-round"
_MESSAGE_KIND = "fed-message"
_MEANS_KIND = "fed-noisy-means"
_RESULT_KIND = "fed-result"
_ABORT_KIND = "fed-abort"
_MECHANISM = "Mul-LDA-DP round"
_MAX_HELD = 64


def create_publishing_accountant(
    path: str | Path | None,
    *,
    publisher: Signer,
    parties: Mapping[str, Ed25519PublicKey],
    dataset_id: str,
    total: Any,
) -> Accountant:
    """The publisher's budget ledger for multi-party rounds: every party's key is pinned.

    Owners replicate it (their keys sign their replicas' checkpoints); only the publisher
    appends. ``path=None`` keeps it in memory (experiments).
    """
    signers = {publisher.id: publisher.public_key, **dict(parties)}
    meta = accountant_metadata(total, Neighbouring.REPLACE_ONE)
    kwargs = {
        "signer": publisher,
        "dataset_id": dataset_id,
        "purpose": "multi-party publishing (Mul-LDA-DP)",
        "signers": signers,
        "metadata": meta,
    }
    ledger = (
        Ledger.in_memory(**kwargs)  # type: ignore[arg-type]
        if path is None
        else Ledger.create(Path(path), **kwargs)  # type: ignore[arg-type]
    )
    return Accountant(ledger)


def _x25519_bytes(key: X25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw.hex()


def _x25519_from(value: str) -> X25519PublicKey:
    try:
        raw = bytes.fromhex(value)
        if len(raw) != 32:
            raise ValueError
        return X25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise ProtocolError("key-share public_key must be 32 bytes in hex") from None


class _Party:
    """Shared message handling: authentication, ordering, phases, abort."""

    role_name = "party"

    def __init__(
        self,
        config: RoundConfig,
        *,
        signer: Signer,
        keys: Mapping[str, Ed25519PublicKey],
    ) -> None:
        if not isinstance(config, RoundConfig):
            raise ParameterTypeError(f"config ({config!r}) must be a RoundConfig")
        if not isinstance(signer, Signer):
            raise ParameterTypeError(f"signer ({signer!r}) must be a Signer")
        self.config = config
        self.signer = signer
        self.id = signer.id
        parties = [config.publisher, *config.owners] + ([config.dealer] if config.dealer else [])
        missing = [p for p in parties if p not in keys]
        if missing:
            raise ParameterError(f"keys lacks the public keys of {missing}")
        self.keys = {p: keys[p] for p in parties}
        self.validator = MessageValidator(config.session_id, self.keys, recipient=self.id)
        self._seq: dict[str, int] = {}
        self._held: dict[str, dict[int, Message]] = {}
        self._waiting: list[Message] = []
        self.state = "waiting"
        self.abort_reason: str | None = None
        self.timings: dict[str, float] = {}
        with warnings.catch_warnings():
            # the paper split is warned about by the FederatedPublisher (and simulate_round), not by
            # every party
            warnings.simplefilter("ignore", NotDifferentiallyPrivateWarning)
            self.plan: FederatedPlan = config.plan()
        p, K = config.n_features, config.n_classes
        self._dims = (K, p, p * (p + 1) // 2)

    def _round_events(self) -> tuple[PrivacyEvent, ...]:
        """What the round charges, derived by every party from the config alone."""
        _, proj = self.config.budgets()
        return self.plan.events(stated=self.config.budget, projections=proj)

    # -- subclass interface --------------------------------------------------------------

    def _allowed(self, sender: str) -> tuple[str, ...]:
        """Kinds ``sender`` may ever send to this role."""
        raise NotImplementedError

    def _spec(self, kind: str) -> Mapping[str, Any]:
        K, p, D = self._dims
        r = self._n_dirs()
        specs: dict[str, Mapping[str, Any]] = {
            Kind.ROUND_START: {"config": dict},
            Kind.LEDGER_ENTRIES: {"entries": list},
            Kind.DEALER_SHARE: {
                "sums": ArraySpec((K, p)),
                "second_moment": ArraySpec((D,)),
                "salt": str,
                "seeded": OptionalField(bool),  # sent only when true: older owners accept it
            },
            Kind.KEY_SHARE: {"public_key": str},
            Kind.COMMITMENT: {
                "config_sha256": str,
                "mean_share_sha256": str,
                "scatter_share_sha256": str,
                "seeded": OptionalField(bool),  # absent from an older owner: unknown
            },
            Kind.MEAN_SHARE: {"sums": ArraySpec((K, p)), "salt": str},
            Kind.NOISY_MEANS: {"means": ArraySpec((K, p)), "ledger_index": int},
            Kind.SCATTER_SHARE: {"second_moment": ArraySpec((D,)), "salt": str},
            Kind.RESULT: {"directions": ArraySpec((p, r)), "ledger_index": int},
            Kind.PROJECTIONS: {"rows": ArraySpec((None, r)), "salt": str},
            Kind.RELEASE: {"ledger_index": int},
            Kind.ABORT: {"reason": str},
        }
        return specs[kind]

    def _n_dirs(self) -> int:
        K = self.config.n_classes
        r = 1 if K == 2 else K - 1
        if self.config.n_components is not None:
            r = min(r, self.config.n_components)
        return min(r, self.config.n_features)

    def _process(self, message: Message, payload: dict[str, Any]) -> list[Message] | None:
        """Handle an in-order message; return None if it belongs to a later phase."""
        raise NotImplementedError

    def _on_abort(self, reason: str) -> list[Message]:
        return []

    # -- public ---------------------------------------------------------------------------

    def check(self, message: object) -> Message:
        """Authenticate ``message`` (no state change); raise ProtocolError if refused."""
        if not isinstance(message, Message):
            raise UnauthenticatedError(f"not a Message: {type(message).__name__}")
        allowed = self._allowed(message.sender) if message.sender in self.keys else ()
        msg = self.validator.authenticate(message, expected_kinds=None)
        if msg.kind not in allowed:
            raise ProtocolError(
                f"{msg.sender!r} may not send {msg.kind!r} to the {self.role_name} "
                f"{self.id!r} (allowed: {sorted(allowed)})"
            )
        check_payload(msg, self._spec(msg.kind))
        return msg

    def handle(self, message: Message) -> list[Message]:
        """Process one incoming message; return the messages to send.

        Raises
        ------
        ReplayError
            A copy of a message already received: dropped, the round goes on.
        ProtocolError
            Refused (another session: the round goes on; anything else: the caller aborts
            the round with :meth:`abort`, see :func:`must_abort`).
        LedgerIntegrityError, DataValidationError, ParameterError
            The publisher's ledger entries do not verify, or the owner's data cannot be
            sent safely: the caller aborts the round.
        """
        if self.state in TERMINAL:
            if isinstance(message, Message) and message.kind == Kind.ABORT:
                return []
            raise ProtocolError(f"the round is over ({self.state}); message ignored")
        t0 = time.perf_counter()
        try:
            self.check(message)
            seq = message.seq
            nxt = self.validator.next_seq(message.sender)
            held = self._held.setdefault(message.sender, {})
            if seq < nxt or seq in held:
                raise ReplayError(
                    f"message seq {seq} from {message.sender!r} ({message.kind}) was already "
                    "received: a replayed copy, dropped"
                )
            if seq > nxt:
                if len(held) >= _MAX_HELD:
                    raise ProtocolError(
                        f"more than {_MAX_HELD} out-of-order messages held from {message.sender!r}"
                    )
                held[seq] = message
                return []
            self.validator.commit(message)
            out = self._dispatch(message)
            while self.state not in TERMINAL and self.validator.next_seq(message.sender) in held:
                nxt_msg = held.pop(self.validator.next_seq(message.sender))
                self.validator.commit(nxt_msg)
                out += self._dispatch(nxt_msg)
            return out
        finally:
            self.timings["handle_s"] = self.timings.get("handle_s", 0.0) + (
                time.perf_counter() - t0
            )

    def abort(self, reason: str) -> list[Message]:
        """End the round without a release; return the ``abort`` messages to send."""
        if self.state in TERMINAL:
            return []
        self.state = ABORTED
        self.abort_reason = str(reason)
        logger.warning("%s %s aborts the round: %s", self.role_name, self.id, reason)
        return self._on_abort(str(reason))

    # -- helpers --------------------------------------------------------------------------

    def _dispatch(self, message: Message) -> list[Message]:
        if message.kind == Kind.ABORT:
            self.state = ABORTED
            self.abort_reason = f"{message.sender} aborted: {message.payload.get('reason')}"
            return self._on_abort(self.abort_reason)
        payload = check_payload(message, self._spec(message.kind))
        result = self._process(message, payload)
        if result is None:
            self._waiting.append(message)
            return []
        out = list(result)
        progressed = True
        while progressed and self._waiting and self.state not in TERMINAL:
            progressed = False
            for waiting in list(self._waiting):
                res = self._process(waiting, check_payload(waiting, self._spec(waiting.kind)))
                if res is not None:
                    self._waiting.remove(waiting)
                    out += res
                    progressed = True
        return out

    def _send(self, recipient: str, kind: str, payload: Mapping[str, Any]) -> Message:
        seq = self._seq.get(recipient, 0)
        self._seq[recipient] = seq + 1
        fields = MessageFields(self.config.session_id, self.id, recipient, seq, kind, payload)
        return sign(fields, self.signer)

    def _violation(self, message: Message, what: str) -> ProtocolError:
        return ProtocolError(
            f"{message.kind} from {message.sender!r} in state {self.state!r}: {what}"
        )


def must_abort(exc: BaseException, message: object = None, *, session_id: str = "") -> bool:
    """Whether a refusal by :meth:`handle` must abort the round.

    Dropped, the round goes on: copies (:class:`~ppdp.federated.messages.ReplayError`) and
    messages that do not authenticate
    (:class:`~ppdp.federated.messages.UnauthenticatedError`: another session, an unknown
    sender, another recipient, a forged or altered signature), which anybody can send. Every
    other refusal comes from a holder of a pinned key who broke the protocol (a kind it may
    not send, a second share, wrong shape, NaN, off the grid, unlike its commitment, a
    ledger that does not verify) and aborts: fail closed.
    """
    if isinstance(exc, ReplayError | UnauthenticatedError):
        return False
    return not (isinstance(message, Message) and session_id and message.session_id != session_id)


# =============================================================================== publisher


class FederatedPublisher(_Party):
    """The publisher: spends the budget, sums the shares, computes and releases the direction.

    The round's budget is spent once every owner's signed ``commitment`` has arrived, before
    any share is requested (the charge point, ``docs/federated.md``, "Outsiders and the
    charge point"): a round that aborts before it spends nothing; after it, only a holder of
    a pinned key can stop the round (a message that does not authenticate is dropped,
    :func:`must_abort`).

    Parameters
    ----------
    config : RoundConfig
    signer : Signer
        The publisher's key (id = ``config.publisher``); signs messages and ledger entries.
    keys : mapping of party id to Ed25519 public key
        Every party's pinned key.
    accountant : Accountant
        The publishing ledger (:func:`create_publishing_accountant`); :meth:`start` checks
        that the round's budget fits (nothing spent), the last owner's commitment spends it.
    allow_seeded : bool
        Run a round in which an owner reports seeded noise (its ``random_state``, or a
        seeded dealer's masks): reproducible, for experiments only. Without it such a round
        aborts at the charge point, nothing spent. The spend records ``seeded: true`` when
        any owner reports seeded noise or does not say (an older ppdp): see
        ``docs/federated.md``, "The seeded flag".
    """

    role_name = "publisher"

    def __init__(
        self,
        config: RoundConfig,
        *,
        signer: Signer,
        keys: Mapping[str, Ed25519PublicKey],
        accountant: Accountant,
        allow_seeded: bool = False,
    ) -> None:
        super().__init__(config, signer=signer, keys=keys)
        if signer.id != config.publisher:
            raise ParameterError(f"signer id ({signer.id!r}) must be the publisher's")
        # The release run's ledger steps, messages apart: checked at start(), charged at
        # the last commitment (under the session's key), recorded at the release. The key
        # is not claimed: the session's start entry makes it run once.
        self._run = ReleaseLedger(ReleaseOptions(accountant), [], _MECHANISM)  # checks the type
        self._key = f"mul-lda-dp:{config.session_id}"
        if not isinstance(allow_seeded, bool):
            raise ParameterTypeError(f"allow_seeded ({allow_seeded!r}) must be a bool")
        self.accountant = accountant
        self.allow_seeded = allow_seeded
        self.ledger = accountant.ledger
        if not config.joint_view:
            warnings.warn(
                "joint_view=False: the paper's per-message noise split; the publisher's joint "
                "view of all messages is not (ε, δ)-DP (ALGORITHMS-publishing B.5 item 2)",
                NotDifferentiallyPrivateWarning,
                stacklevel=user_stacklevel(),
            )
        if config.release == "raw-projections":
            warnings.warn(
                "release='raw-projections' publishes wᵀx of every record exactly: not "
                "differentially private (ALGORITHMS-publishing B.5 item 1)",
                NotDifferentiallyPrivateWarning,
                stacklevel=user_stacklevel(),
            )
        self._sent_upto = dict.fromkeys(config.owners, 0)
        self._start_recorded = False
        self._commitments: dict[str, dict[str, Any]] = {}
        self._commitment_envelopes: dict[str, dict[str, Any]] = {}
        self._mean_shares: dict[str, NDArray[np.float64]] = {}
        self._scatter_shares: dict[str, NDArray[np.float64]] = {}
        self._projections: dict[str, NDArray[np.float64]] = {}
        self._pending_envelopes: list[dict[str, Any]] = []
        self.spend_record: Any = None
        self.noisy_sums: NDArray[np.float64] | None = None
        self.noisy_means: NDArray[np.float64] | None = None
        self.noisy_second_moment: NDArray[np.float64] | None = None
        self.directions: NDArray[np.float64] | None = None
        self.projections: NDArray[np.float64] | None = None
        self.release_entry: Any = None

    def _allowed(self, sender: str) -> tuple[str, ...]:
        if sender in self.config.owners:
            return (
                Kind.COMMITMENT,
                Kind.MEAN_SHARE,
                Kind.SCATTER_SHARE,
                Kind.PROJECTIONS,
                Kind.ABORT,
            )
        if sender == self.config.dealer:
            return (Kind.ABORT,)
        return ()

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee of what this round releases (trust model in the assumptions)."""
        g = self.plan.guarantee(dealer=self.config.dealer_mode)
        _, proj = self.config.budgets()
        if self.config.release == "raw-projections":
            return Guarantee.none(
                "raw projections wᵀx of every record are released: an exact linear function "
                "of each record, not differentially private (ALGORITHMS-publishing B.5 item 1); "
                f"the direction alone carries: {g}",
                mechanism="Mul-LDA-DP with raw projections (paper)",
                details={"direction_guarantee": g.to_dict()},
            )
        if self.config.release == "noisy-projections" and g.is_private:
            assert proj is not None
            b = g.budget
            assert b is not None
            return Guarantee.approx(
                b.epsilon + proj.epsilon,
                b.delta,
                relation=Neighbouring.REPLACE_ONE,
                mechanism="Mul-LDA-DP + Laplace noisy projections",
                assumptions=(
                    *g.assumptions,
                    f"projections: unit direction(s), per-row Laplace with L1 sensitivity "
                    f"2·r (r = {self._n_dirs()}), ε = {proj.epsilon!r}, added by each owner",
                ),
                details=dict(g.details),
            )
        return g

    def _planned_charge(self) -> Charge:
        """The round's one ledger entry: its typed events and the plan's details."""
        cfg = self.config
        details = {"session_id": cfg.session_id, "release": cfg.release, "plan": self.plan.details}
        return Charge(self._round_events(), _MECHANISM, details)

    def start(self) -> list[Message]:
        """Check the round's budget (nothing spent) and start the round.

        The spend itself happens when the last owner's commitment arrives.

        Raises
        ------
        BudgetExceededError
            The round does not fit the ledger's remaining budget; nothing is sent.
        ParameterError
            The session was started before (a session id runs once: messages of an earlier
            attempt, validly signed, could otherwise be replayed into this one).
        """
        if self.state != "waiting":
            raise ProtocolError(f"publisher already started (state {self.state!r})")
        t0 = time.perf_counter()
        cfg = self.config
        self._run.charges = [self._planned_charge()]
        try:
            self._run.check()
        except BudgetExceededError:
            # The state stays "waiting": the caller's abort() then tells the other parties
            # at once instead of leaving them to their phase timeout.
            self.abort_reason = "budget exceeded: nothing spent, no share requested"
            raise
        earlier = self.accountant.charged(self._key)
        if earlier is not None:
            # Running a charged session again would release fresh noise under one recorded
            # charge (docs/proofs/ledger.md, "the replay hazard").
            self.abort_reason = f"session {cfg.session_id!r} was already charged"
            raise ParameterError(
                f"session_id ({cfg.session_id!r}) was already charged at ledger entry "
                f"{earlier.index}; start a new session (new id, fresh masks)"
            )
        with self.ledger.transaction() as txn:
            # A session id runs once, charged or not: the signed messages of an earlier
            # attempt (seq 0, 1, ... again) would pass every check in a new one, so an
            # outsider could replay them into it. Recorded before any message leaves.
            started = [
                e.index
                for e in txn.entries(0)
                if e.kind == _START_KIND and e.payload.get("session_id") == cfg.session_id
            ]
            if started:
                self.abort_reason = f"session {cfg.session_id!r} was already started"
                raise ParameterError(
                    f"session_id ({cfg.session_id!r}) was already started at ledger entry "
                    f"{started[0]}; start a new session (new id, fresh masks)"
                )
            txn.append(_START_KIND, {"session_id": cfg.session_id, "config": cfg.to_dict()})
        self._start_recorded = True
        out: list[Message] = []
        start_payload = {"config": cfg.to_dict()}
        for owner in cfg.owners:
            out.append(self._send(owner, Kind.ROUND_START, start_payload))
        out += self._ledger_updates()  # the genesis (pinned keys), earlier rounds, the start
        if cfg.dealer is not None:
            out.append(self._send(cfg.dealer, Kind.ROUND_START, start_payload))
        self.state = "collecting-commitments"
        self.timings["start_s"] = time.perf_counter() - t0
        return out

    def _seeded_owners(self) -> tuple[list[str], list[str]]:
        """The owners whose commitment says their noise is seeded, and those that do not say."""
        said = {o: self._commitments[o].get("seeded") for o in self.config.owners}
        return [o for o, v in said.items() if v is True], [o for o, v in said.items() if v is None]

    def _charge(self) -> list[Message]:
        """Every owner has committed: spend the budget, record the round, request the shares."""
        cfg = self.config
        seeded_by, unreported = self._seeded_owners()
        if seeded_by and not self.allow_seeded:
            return self.abort(
                f"owner(s) {seeded_by} report seeded noise (a random_state: reproducible, not "
                "for real releases); a seeded round runs only with allow_seeded=True: nothing "
                "spent"
            )
        # Conservative: any seeded owner, or one that does not say, makes the round seeded.
        seeded, run = bool(seeded_by or unreported), self._run
        if seeded:  # allowed: with allow_seeded, or only owners that do not say (older ppdp)
            (planned,) = run.charges
            extra = {"seeded_owners": seeded_by, "seeded_unreported": unreported}
            run.charges = [Charge(planned.events, planned.mechanism, {**planned.details, **extra})]
        run.options = ReleaseOptions(
            self.accountant, allow_seeded=seeded, idempotency_key=self._key
        )
        try:
            (record,) = run.charge(seeded)
        except BudgetExceededError as exc:  # another round spent the budget since start()
            return self.abort(f"budget exceeded at the charge point: nothing spent ({exc})")
        if record.replayed:
            return self.abort(
                f"session {cfg.session_id!r} was already charged at ledger entry "
                f"{record.index}: nothing spent again, nothing released"
            )
        self.spend_record = record
        self.accountant.append_event(
            _ROUND_KIND,
            {
                "session_id": cfg.session_id,
                "config": cfg.to_dict(),
                "spend_index": record.index,
                "guarantee": self.guarantee.to_dict(),
                "commitments": [self._commitment_envelopes[o] for o in cfg.owners],
            },
        )
        self.state = "collecting-means"
        return self._ledger_updates()

    # -- phases ---------------------------------------------------------------------------

    def _process(self, message: Message, payload: dict[str, Any]) -> list[Message] | None:
        kind, sender = message.kind, message.sender
        if kind == Kind.COMMITMENT:
            if self.state != "collecting-commitments" or sender in self._commitments:
                raise self._violation(message, "not expecting a commitment from this owner")
            if payload["config_sha256"] != _config_digest(self.config):
                raise self._violation(message, "committed to another round configuration")
            self._commitments[sender] = payload
            self._commitment_envelopes[sender] = message.envelope()
            if len(self._commitments) == len(self.config.owners):
                return self._charge()
            return []
        if kind == Kind.MEAN_SHARE:
            if self.state == "collecting-commitments":
                return None  # cannot happen with honest owners; wait for the charge
            if self.state != "collecting-means" or sender in self._mean_shares:
                raise self._violation(message, "not expecting a mean share from this owner")
            self._check_committed(message, "mean_share_sha256")
            self._check_grid(payload["sums"], self.plan.sum_grid, message)
            self._record(message)
            self._mean_shares[sender] = payload["sums"]
            if len(self._mean_shares) == len(self.config.owners):
                return self._finish_means()
            return []
        if kind == Kind.SCATTER_SHARE:
            if self.state in ("collecting-commitments", "collecting-means"):
                return None  # cannot happen with honest owners; wait for the phase
            if self.state != "collecting-scatter" or sender in self._scatter_shares:
                raise self._violation(message, "not expecting a scatter share from this owner")
            self._check_committed(message, "scatter_share_sha256")
            self._check_grid(payload["second_moment"], self.plan.second_moment_grid, message)
            self._record(message)
            self._scatter_shares[sender] = payload["second_moment"]
            if len(self._scatter_shares) == len(self.config.owners):
                return self._finish_scatter()
            return []
        if kind == Kind.PROJECTIONS:
            if self.state in ("collecting-commitments", "collecting-means", "collecting-scatter"):
                return None
            if self.state != "collecting-projections" or sender in self._projections:
                raise self._violation(message, "not expecting projections from this owner")
            self._record(message)
            self._projections[sender] = payload["rows"]
            if len(self._projections) == len(self.config.owners):
                self.projections = np.concatenate(
                    [self._projections[o] for o in self.config.owners], axis=0
                )
                return self._release()
            return []
        raise self._violation(message, "unexpected kind")

    def _check_committed(self, message: Message, field: str) -> None:
        # The share must be the one its owner committed to before the spend (its salted
        # SHA-256 digest): after the charge the round's inputs are fixed.
        if message.payload_sha256 != self._commitments[message.sender][field]:
            raise self._violation(message, "the share differs from its owner's commitment")

    def _check_grid(self, arr: NDArray[np.float64], grid: float, message: Message) -> None:
        # Honest shares are exact multiples of the grid below 2**52 grid steps / m, so the
        # sum is exact and the masks cancel to zero; anything else is malformed.
        limit = exact_limit(grid) / len(self.config.owners)
        if arr.size and (
            float(np.max(np.abs(arr))) >= limit or not np.all(np.remainder(arr, grid) == 0.0)
        ):
            raise self._violation(message, "share values are not on the agreed grid")

    def _record(self, message: Message) -> None:
        # Accepted shares are recorded with the phase's result, in one atomic commit (one
        # fsync instead of m + 1), before anything computed from them leaves the publisher.
        self._pending_envelopes.append(message.envelope())

    def _append(self, kind: str | None, payload: Mapping[str, Any] | None = None) -> Any:
        """Append the pending envelopes and (optionally) one event, atomically."""
        pending, self._pending_envelopes = self._pending_envelopes, []
        entry = None
        with self.ledger.transaction() as txn:
            for env in pending:
                txn.append(_MESSAGE_KIND, {"envelope": env})
            if kind is not None:
                entry = txn.append(kind, dict(payload or {}))
        return entry

    def _finish_means(self) -> list[Message]:
        counts = np.asarray(self.config.class_counts, dtype=np.float64)
        total = np.zeros_like(next(iter(self._mean_shares.values())))
        for owner in self.config.owners:  # exact: every term is on the grid
            total = total + self._mean_shares[owner]
        self.noisy_sums = total
        self.noisy_means = total / counts[:, None]
        entry = self._append(
            _MEANS_KIND,
            {
                "session_id": self.config.session_id,
                "noisy_means": encode_array(self.noisy_means),
            },
        )
        self.state = "collecting-scatter"
        out = self._ledger_updates()
        payload = {"means": encode_array(self.noisy_means), "ledger_index": entry.index}
        for owner in self.config.owners:
            out.append(self._send(owner, Kind.NOISY_MEANS, payload))
        return out

    def _finish_scatter(self) -> list[Message]:
        assert self.noisy_means is not None
        total = np.zeros_like(next(iter(self._scatter_shares.values())))
        for owner in self.config.owners:
            total = total + self._scatter_shares[owner]
        self.noisy_second_moment = from_upper(total, self.config.n_features)
        S = noisy_scatter(self.noisy_second_moment, self.noisy_means, self.config.class_counts)
        self.directions = fisher_directions(
            self.noisy_means,
            self.config.class_counts,
            S,
            ridge=self.config.ridge_for(self.plan.plan),
            n_components=self._n_dirs(),
            constant=self.config.constant(),
        )
        entry = self._append(
            _RESULT_KIND,
            {
                "session_id": self.config.session_id,
                "noisy_second_moment_upper": encode_array(total),
                "directions": encode_array(self.directions),
            },
        )
        out = self._ledger_updates()
        payload = {"directions": encode_array(self.directions), "ledger_index": entry.index}
        for owner in self.config.owners:
            out.append(self._send(owner, Kind.RESULT, payload))
        if self.config.release == "direction":
            return out + self._release()
        self.state = "collecting-projections"
        return out

    def _release(self) -> list[Message]:
        details: dict[str, Any] = {
            "session_id": self.config.session_id,
            "release": self.config.release,
        }
        if self.projections is not None:
            details["projections_sha256"] = _digest(self.projections)
            details["projection_rows"] = int(self.projections.shape[0])
        self._append(None)
        self.release_entry = self._run.record(self.guarantee, **details)
        self.state = DONE
        out = self._ledger_updates()
        done = {"ledger_index": self.release_entry.index}
        for owner in self.config.owners:
            out.append(self._send(owner, Kind.RELEASE, done))
        if self.config.dealer is not None:  # the dealer's exit status reports the outcome
            out.append(self._send(self.config.dealer, Kind.RELEASE, done))
        return out

    def _ledger_updates(self) -> list[Message]:
        entries = self.ledger.entries(refresh=False)
        out = []
        encoded: dict[int, list[dict[str, Any]]] = {}
        for owner in self.config.owners:
            start = self._sent_upto[owner]
            if start >= len(entries):
                continue
            if start not in encoded:
                encoded[start] = [entry_to_row(e) for e in entries[start:]]
            out.append(self._send(owner, Kind.LEDGER_ENTRIES, {"entries": encoded[start]}))
            self._sent_upto[owner] = len(entries)
        return out

    def _on_abort(self, reason: str) -> list[Message]:
        out: list[Message] = []
        if self._start_recorded:
            try:
                self._append(
                    _ABORT_KIND,
                    {
                        "session_id": self.config.session_id,
                        "reason": reason[:500],
                        "charged": self.spend_record is not None,
                    },
                )
                out += self._ledger_updates()
            except PPDPError as exc:  # the abort stands even if the ledger refuses
                logger.error("publisher could not record the abort: %s", exc)
        targets = list(self.config.owners) + ([self.config.dealer] if self.config.dealer else [])
        for party in targets:
            out.append(self._send(party, Kind.ABORT, {"reason": reason[:500]}))
        return out


def _digest(arr: NDArray[np.float64]) -> str:
    import hashlib

    return hashlib.sha256(canonical_dumps(encode_array(arr))).hexdigest()


def _config_digest(config: RoundConfig) -> str:
    """SHA-256 of the canonical round configuration (what an owner's commitment binds)."""
    return payload_digest(config.to_dict())


# =============================================================================== owner


class DataOwner(_Party):
    """A data owner: sends masked, noisy partial statistics; keeps a verified ledger replica.

    Parameters
    ----------
    config : RoundConfig
        The owner's own copy; the publisher's ``round-start`` must match it exactly.
    signer : Signer
        The owner's key (id in ``config.owners``).
    keys : mapping of party id to Ed25519 public key
    X : array_like (n_j, d), optional
        The owner's records, each already scaled to ``‖x‖₂ ≤ 1`` by a declared bound.
    y : array_like (n_j,), optional
        Class labels, each in ``config.classes``.
    statistics : OwnerStatistics, optional
        Instead of ``X`` and ``y``: the owner's reduced statistics
        (:func:`ppdp.federated.owner_data.load_owner_statistics`, which reads a Parquet
        dataset or a Dask DataFrame partition by partition). Class code ``k`` stands for
        the label value ``k`` (as ``schema.encode``'s codes), looked up in
        ``config.classes``. Only for ``release="direction"`` (projections need the rows).
    replica_path : path, optional
        Keep the ledger replica in this file (verified, checkpointed by this owner); an
        existing replica is opened and verified first, and the publisher's entries must
        extend it. Default: in memory.
    random_state : None, int or RandomSource
        The owner's own noise (OS CSPRNG by default).

    Raises
    ------
    DataValidationError
        Records of the wrong shape, non-finite, with norm > 1 (beyond 1e-9 rounding), or
        labels outside ``config.classes``; raised at construction, before any message.
    ParameterError
        Both or neither of (``X``, ``y``) and ``statistics``; ``statistics`` for a round
        that releases projections.
    """

    role_name = "owner"

    def __init__(
        self,
        config: RoundConfig,
        *,
        signer: Signer,
        keys: Mapping[str, Ed25519PublicKey],
        X: ArrayLike | None = None,
        y: ArrayLike | None = None,
        statistics: OwnerStatistics | None = None,
        replica_path: str | Path | None = None,
        random_state: RandomState = None,
    ) -> None:
        super().__init__(config, signer=signer, keys=keys)
        if signer.id not in config.owners:
            raise ParameterError(f"signer id ({signer.id!r}) is not one of the owners")
        self._X: NDArray[np.float64] | None = None
        self._labels: NDArray[np.int64] | None = None
        self._sums: NDArray[np.float64] | None = None
        self._second: NDArray[np.float64] | None = None
        if statistics is not None:
            if X is not None or y is not None:
                raise ParameterError(
                    "statistics: give the owner's records (X, y) or its statistics, not both"
                )
            self._sums, self._second = _check_statistics(statistics, config)
        elif X is None or y is None:
            raise ParameterError(
                "X and y (the owner's records) are required unless statistics= is given"
            )
        else:
            self._X, self._labels = _check_data(X, y, config)
        self._rng: RandomSource = resolve_random_state(random_state)
        self._dealer_seeded = False
        if replica_path is None:
            self.replica: MemoryReplica | FileReplica = MemoryReplica()
        else:
            path = Path(replica_path)
            ledger = Ledger.open(path, signer=signer) if path.exists() else None
            self.replica = FileReplica(ledger, path, signer)
        self._started = False
        self._round_ok = False
        self._spend_ok = False
        self._masks: Masks | None = None
        self._x25519: X25519PrivateKey | None = None
        self._peer_keys: dict[str, X25519PublicKey] = {}
        self._mean_payload: dict[str, Any] | None = None
        self._scatter_payload: dict[str, Any] | None = None
        self._committed = False
        self._sent_means = False
        self._sent_scatter = False
        self.noisy_means: NDArray[np.float64] | None = None
        self.directions: NDArray[np.float64] | None = None
        self.projections: NDArray[np.float64] | None = None

    def _allowed(self, sender: str) -> tuple[str, ...]:
        if sender == self.config.publisher:
            return (
                Kind.ROUND_START,
                Kind.LEDGER_ENTRIES,
                Kind.NOISY_MEANS,
                Kind.RESULT,
                Kind.RELEASE,
                Kind.ABORT,
            )
        if sender == self.config.dealer:
            return (Kind.DEALER_SHARE, Kind.ABORT)
        if self.config.dealer is None and sender in self.config.owners and sender != self.id:
            return (Kind.KEY_SHARE, Kind.ABORT)
        return ()

    def start(self) -> list[Message]:
        """Owners wait for the publisher's ``round-start``; nothing to send yet."""
        return []

    @property
    def seeded(self) -> bool:
        """Whether this owner's shares hold reproducible randomness: its own noise stream
        is seeded, or the dealer said its masks are."""
        return not self._rng.is_secure or self._dealer_seeded

    @property
    def replica_ledger(self) -> Ledger | None:
        """The replica's :class:`~ppdp.ledger.Ledger` (file replicas only)."""
        return self.replica.ledger if isinstance(self.replica, FileReplica) else None

    # -- phases ---------------------------------------------------------------------------

    def _process(self, message: Message, payload: dict[str, Any]) -> list[Message] | None:
        kind = message.kind
        if kind == Kind.ROUND_START:
            if self._round_ok:
                raise self._violation(message, "a second round-start")
            got = payload["config"]
            if got != self.config.to_dict():
                diff = sorted(
                    k
                    for k in set(got) | set(self.config.to_dict())
                    if got.get(k) != self.config.to_dict().get(k)
                )
                raise self._violation(message, f"config differs from this owner's in {diff}")
            self._round_ok = True
            self.state = "preparing"
            out: list[Message] = []
            if self.config.dealer is None:
                self._x25519 = X25519PrivateKey.generate()
                pub = {"public_key": _x25519_bytes(self._x25519.public_key())}
                for other in self.config.owners:
                    if other != self.id:
                        out.append(self._send(other, Kind.KEY_SHARE, pub))
            return out + self._maybe_commit()
        if kind == Kind.LEDGER_ENTRIES:
            self._sync(payload["entries"])
            return self._maybe_send_means()
        if kind == Kind.DEALER_SHARE:
            if self._masks is not None or self._committed:
                raise self._violation(message, "a second dealer share")
            self._masks = Masks(payload["sums"], payload["second_moment"])
            self._dealer_seeded = payload["seeded"] is True
            self._check_mask_grid(message)
            return self._maybe_commit()
        if kind == Kind.KEY_SHARE:
            if not self._round_ok:
                return None
            if message.sender in self._peer_keys:
                raise self._violation(message, "a second key share")
            self._peer_keys[message.sender] = _x25519_from(payload["public_key"])
            if len(self._peer_keys) == len(self.config.owners) - 1:
                assert self._x25519 is not None
                self._masks = pairwise_masks(
                    self.plan,
                    owners=self.config.owners,
                    me=self.id,
                    own_key=self._x25519,
                    peer_keys=self._peer_keys,
                    session_id=self.config.session_id,
                )
                self._x25519 = None  # the pair keys are no longer needed
            return self._maybe_commit()
        if kind == Kind.NOISY_MEANS:
            if not self._sent_means:
                return None
            if self._sent_scatter:
                raise self._violation(message, "noisy means after the scatter share")
            self._check_logged(
                payload["ledger_index"], _MEANS_KIND, "noisy_means", payload["means"]
            )
            self.noisy_means = payload["means"]
            assert self._scatter_payload is not None
            self._sent_scatter = True
            self.state = "sent-scatter"
            payload_out, self._scatter_payload = self._scatter_payload, None
            return [self._send(self.config.publisher, Kind.SCATTER_SHARE, payload_out)]
        if kind == Kind.RESULT:
            if not self._sent_scatter:
                return None
            if self.directions is not None:
                raise self._violation(message, "a second result")
            self._check_logged(
                payload["ledger_index"], _RESULT_KIND, "directions", payload["directions"]
            )
            self.directions = payload["directions"]
            self.state = "result"
            if self.config.release == "direction":
                return []
            return [self._projections()]
        if kind == Kind.RELEASE:
            if self.directions is None:
                return None
            entry = self._entry(payload["ledger_index"])
            if (
                entry.kind != "release"
                or entry.payload.get("details", {}).get("session_id") != self.config.session_id
            ):
                raise self._violation(message, "the release is not recorded in the ledger")
            self.state = DONE
            return []
        raise self._violation(message, "unexpected kind")

    def _maybe_commit(self) -> list[Message]:
        """With the config agreed and the masks ready: fix both shares, commit to them.

        The shares (masks and the owner's noise included) are computed now and kept; only
        their salted SHA-256 digests leave, in a signed ``commitment``. The publisher spends
        the round's budget once every owner has committed, and the owner sends each share
        only after its replica shows that spend (:meth:`_maybe_send_means`).
        """
        if self._committed or not (self._round_ok and self._masks is not None):
            return []
        self._mean_payload = self._mean_share()
        self._scatter_payload = self._scatter_share()
        self._masks = None  # never reused
        self._committed = True
        self.state = "committed"
        commitment = {
            "config_sha256": _config_digest(self.config),
            "mean_share_sha256": payload_digest(self._mean_payload),
            "scatter_share_sha256": payload_digest(self._scatter_payload),
            "seeded": self.seeded,
        }
        sent = self._send(self.config.publisher, Kind.COMMITMENT, commitment)
        return [sent, *self._maybe_send_means()]

    def _maybe_send_means(self) -> list[Message]:
        if self._sent_means or not (self._committed and self._spend_ok):
            return []
        assert self._mean_payload is not None
        self._sent_means = True
        self.state = "sent-means"
        payload, self._mean_payload = self._mean_payload, None
        return [self._send(self.config.publisher, Kind.MEAN_SHARE, payload)]

    def _mean_share(self) -> dict[str, Any]:
        assert self._masks is not None
        p = self.plan
        if self._sums is not None:  # reduced from a distributed table
            sums = self._sums.copy()
        else:
            assert self._X is not None and self._labels is not None
            sums = np.zeros((self.config.n_classes, self.config.n_features))
            for c in range(self.config.n_classes):
                rows = self._X[self._labels == c]
                if rows.shape[0]:
                    sums[c] = rows.sum(axis=0)
        noisy = np.empty_like(sums)
        for c in range(self.config.n_classes):
            g = noise.gaussian(
                p.owner_sum_sigmas[c],
                self.config.n_features,
                random_state=self._rng,
                granularity=p.sum_grid,
            )
            noisy[c] = noise.snap(sums[c], p.sum_grid, name="class sums") + self._masks.sums[c] + g
        self._check_exact(noisy, p.sum_grid)
        return {"sums": encode_array(noisy), "salt": new_salt()}

    def _scatter_share(self) -> dict[str, Any]:
        assert self._masks is not None
        p = self.plan
        if self._second is not None:  # reduced from a distributed table
            second = upper(self._second)
        else:
            assert self._X is not None
            second = upper(self._X.T @ self._X)
        g = noise.gaussian(
            p.owner_second_moment_sigma,
            second.size,
            random_state=self._rng,
            granularity=p.second_moment_grid,
        )
        noisy = (
            noise.snap(second, p.second_moment_grid, name="second moment")
            + self._masks.second_moment
            + g
        )
        self._check_exact(noisy, p.second_moment_grid)
        return {"second_moment": encode_array(noisy), "salt": new_salt()}

    def _projections(self) -> Message:
        assert self.directions is not None and self._X is not None
        W = self.directions
        rows = self._X @ W
        if self.config.release == "noisy-projections":
            _, proj = self.config.budgets()
            assert proj is not None
            r = W.shape[1]
            norms = np.linalg.norm(W, axis=0)
            W = W / np.where(norms > 0, norms, 1.0)
            values = self._X @ W
            p_dim = self.config.n_features
            # One Laplace mechanism on the owner's whole (n_j, r) block: a replace-one
            # neighbour changes one row by at most 2 per unit column (‖x − x'‖ ≤ 2), so the
            # L1 sensitivity is 2r (plus the rounding of the computed products, as in the
            # centralised publisher); dimension counts every coordinate for the grid term.
            gamma = p_dim * 2.0**-53 / (1.0 - p_dim * 2.0**-53)
            mech = LaplaceMechanism(
                epsilon=proj.epsilon,
                sensitivity=(2.0 * r + 2.0 * r * gamma) * (1.0 + 2.0**-20),
                dimension=max(1, values.size),
                allow_large_epsilon=True,
            )
            rows = np.asarray(
                mech.randomise(values, random_state=self._rng), dtype=np.float64
            ).reshape(-1, r)
        self.projections = rows
        self.state = "sent-projections"
        payload = {"rows": encode_array(rows), "salt": new_salt()}
        return self._send(self.config.publisher, Kind.PROJECTIONS, payload)

    def _check_exact(self, arr: NDArray[np.float64], grid: float) -> None:
        if float(np.max(np.abs(arr))) >= exact_limit(grid) / len(self.config.owners):
            raise ParameterError(
                "a share exceeds 2**52 grid steps / m, so sums would not be exact: the records "
                "are not scaled to norm <= 1, or mask_scale is too large"
            )

    def _check_mask_grid(self, message: Message) -> None:
        assert self._masks is not None
        for arr, grid in (
            (self._masks.sums, self.plan.sum_grid),
            (self._masks.second_moment, self.plan.second_moment_grid),
        ):
            if not np.all(np.remainder(arr, grid) == 0.0):
                raise self._violation(message, "dealer masks are not on the agreed grid")

    # -- ledger replica -------------------------------------------------------------------

    def _sync(self, raw_rows: list[Any]) -> None:
        rows = [entry_from_row(r) for r in raw_rows]
        held = len(self.replica)
        if rows and rows[0][0] < held:
            # Re-sent entries must be byte-identical to those held.
            for row in rows:
                if row[0] >= held:
                    break
                if self.replica.entries(row[0])[0].hash != row[6]:
                    raise LedgerIntegrityError(
                        f"entry {row[0]}: the publisher's copy differs from this replica's "
                        "(ledger forked or rewritten)",
                        index=row[0],
                    )
            rows = [r for r in rows if r[0] >= held]
        if rows and rows[0][0] != held:
            raise LedgerIntegrityError(
                f"ledger entries start at index {rows[0][0]} but this replica holds {held}: "
                "entries missing, or the publisher's ledger was truncated or rolled back",
                index=held,
            )
        self.replica.extend(rows)
        self._check_budget()

    def _check_budget(self) -> None:
        entries = self.replica.entries()
        if not entries:
            return
        from ppdp.accounting import tally_for

        genesis = entries[0]
        if set(genesis.payload.get("signers", {})) < set(self.keys):
            raise LedgerIntegrityError(
                "the publishing ledger does not pin every party of the round", index=0
            )
        tally = tally_for(genesis.payload.get("metadata", {}))
        tally.fold(entries)  # raises LedgerIntegrityError on any overspend
        for e in entries:
            if e.kind != "spend":
                continue
            det = e.payload.get("details", {})
            if det.get("session_id") == self.config.session_id:
                expected = self._round_events()
                want = expected[0] if len(expected) == 1 else Composed(events=expected)
                if "event" in e.payload:
                    # the publisher must charge exactly the events this config implies
                    try:
                        differs = event_from_dict(e.payload["event"]) != want
                    except PPDPError:
                        differs = True
                elif not isinstance(want, EpsilonDelta):
                    differs = True
                else:
                    differs = Decimal(repr(e.payload["epsilon"])) != Decimal(
                        repr(self.config.epsilon)
                    ) or (Decimal(repr(e.payload["delta"])) != Decimal(repr(self.config.delta)))
                if differs:
                    raise LedgerIntegrityError(
                        f"entry {e.index}: the round's spend differs from its budget "
                        "(the events its config implies)",
                        index=e.index,
                    )
                if self.seeded and e.payload.get("seeded") is not True:
                    raise LedgerIntegrityError(
                        f"entry {e.index}: the round's spend is not recorded as seeded, but "
                        f"owner {self.id!r} committed seeded noise",
                        index=e.index,
                    )
                self._spend_ok = True

    def _entry(self, index: int) -> Any:
        entries = self.replica.entries()
        if not 0 <= index < len(entries):
            raise ProtocolError(f"ledger entry {index} is not in this owner's replica")
        return entries[index]

    def _check_logged(self, index: int, kind: str, key: str, value: NDArray[np.float64]) -> None:
        entry = self._entry(index)
        if entry.kind != kind or entry.payload.get("session_id") != self.config.session_id:
            raise ProtocolError(f"ledger entry {index} is not this round's {kind}")
        logged = decode_array(entry.payload.get(key), name=key)
        if logged.shape != value.shape or logged.tobytes() != value.tobytes():
            raise ProtocolError(f"{key} differ from those recorded in ledger entry {index}")

    def _on_abort(self, reason: str) -> list[Message]:
        self._masks = None
        self._mean_payload = self._scatter_payload = None
        if self.abort_reason and self.abort_reason.startswith(f"{self.config.publisher} "):
            return []
        return [self._send(self.config.publisher, Kind.ABORT, {"reason": reason[:500]})]


def _check_data(
    X: ArrayLike, y: ArrayLike, config: RoundConfig
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValidationError("X must be a numeric (n, d) array") from None
    if arr.ndim != 2 or arr.shape[1] != config.n_features:
        raise DataValidationError(f"X has shape {arr.shape}; expected (n, {config.n_features})")
    if not np.all(np.isfinite(arr)):
        raise DataValidationError("X contains NaN or infinity")
    norms = np.linalg.norm(arr, axis=1) if arr.size else np.zeros(0)
    n_over = int(np.count_nonzero(norms > 1.0 + 1e-9))
    if n_over:  # the count, never a value of the private data
        raise DataValidationError(
            f"X has {n_over} record(s) of L2 norm > 1: scale records by a declared bound "
            "(never the data's maximum) before the round"
        )
    over = norms > 1.0
    if np.any(over):  # float rounding of a unit vector: pull strictly inside the ball
        arr = arr.copy()
        arr[over] *= ((1.0 - 1e-12) / norms[over])[:, None]
    labels = np.asarray(y)
    if labels.shape != (arr.shape[0],):
        raise DataValidationError(f"y has shape {labels.shape}; expected ({arr.shape[0]},)")
    index = {c: i for i, c in enumerate(config.classes)}
    try:
        codes = np.array(
            [index[v.item() if hasattr(v, "item") else v] for v in labels], dtype=np.int64
        )
    except KeyError:
        # The label is a value of the private data: name the column, never the value.
        raise DataValidationError(
            "y (the labels) holds values that are not among the round's classes "
            f"{list(config.classes)}; declare every class, or drop those rows"
        ) from None
    return arr, codes


def _check_statistics(
    statistics: OwnerStatistics, config: RoundConfig
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The class sums in ``config.classes`` order and the second moment, checked."""
    if not isinstance(statistics, OwnerStatistics):
        raise ParameterTypeError(
            f"statistics ({type(statistics).__name__}) must be an OwnerStatistics; see "
            "ppdp.federated.owner_data.load_owner_statistics"
        )
    if config.release != "direction":
        raise ParameterError(
            f"statistics: a round with release={config.release!r} needs the owner's rows "
            "(X, y) for its projections; statistics serve release='direction' only"
        )
    statistics.check()
    d = statistics.n_features
    if d != config.n_features or statistics.second_moment.shape != (d, d):
        raise DataValidationError(
            f"statistics have {d} feature(s); the round expects {config.n_features}"
        )
    for name, arr in (
        ("class sums", statistics.class_sums),
        ("second moment", statistics.second_moment),
    ):
        if not np.all(np.isfinite(arr)):
            raise DataValidationError(f"statistics: the {name} contain NaN or infinity")
    index = {c: i for i, c in enumerate(config.classes)}
    sums = np.zeros((config.n_classes, d))
    for code, count in enumerate(np.asarray(statistics.class_counts)):
        if int(count) == 0:
            continue
        if code not in index:
            # A class of the private data: name the column, never the value.
            raise DataValidationError(
                "y (the labels) holds values that are not among the round's classes "
                f"{list(config.classes)}; declare every class, or drop those rows"
            )
        sums[index[code]] = statistics.class_sums[code]
    return sums, np.array(statistics.second_moment, dtype=np.float64)


# =============================================================================== dealer


class NoiseDealer(_Party):
    """The trusted dealer: on ``round-start`` it sends each owner its zero-sum masks.

    The masks must reach their owner only (the HTTP transport seals them to the owner's
    X25519 key): with them, the publisher could cancel an owner's mask and see its partial
    with only ``σ²/m`` noise (ALGORITHMS-publishing B.5 item 3).

    After dealing (state ``"dealt"``) the dealer waits for the outcome: the publisher's
    ``release`` ends it ``"done"``, an ``abort`` ends it ``"aborted"``, so its process exit
    status reports the round. A dealer that aborts after dealing (its own timeout) tells
    nobody: the round no longer depends on it, so its abort must not end the round.
    """

    role_name = "dealer"

    def __init__(
        self,
        config: RoundConfig,
        *,
        signer: Signer,
        keys: Mapping[str, Ed25519PublicKey],
        random_state: RandomState = None,
    ) -> None:
        super().__init__(config, signer=signer, keys=keys)
        if config.dealer is None or signer.id != config.dealer:
            raise ParameterError(f"signer id ({signer.id!r}) is not the round's dealer")
        self._rng = resolve_random_state(random_state)

    def _allowed(self, sender: str) -> tuple[str, ...]:
        if sender == self.config.publisher:
            return (Kind.ROUND_START, Kind.RELEASE, Kind.ABORT)
        if sender in self.config.owners:
            return (Kind.ABORT,)
        return ()

    def start(self) -> list[Message]:
        return []

    def _process(self, message: Message, payload: dict[str, Any]) -> list[Message] | None:
        if message.kind == Kind.RELEASE and self.state == "dealt":
            self.state = DONE
            return []
        if message.kind != Kind.ROUND_START or self.state != "waiting":
            raise self._violation(message, "unexpected message")
        if payload["config"] != self.config.to_dict():
            raise self._violation(message, "config differs from the dealer's")
        masks = dealer_masks(self.plan, random_state=self._rng)
        out = []
        for owner, m in zip(self.config.owners, masks, strict=True):
            payload_out = {
                "sums": encode_array(m.sums),
                "second_moment": encode_array(m.second_moment),
                "salt": new_salt(),
            }
            if not self._rng.is_secure:  # absent otherwise, as an older dealer's share
                payload_out["seeded"] = True
            out.append(self._send(owner, Kind.DEALER_SHARE, payload_out))
        self.state = "dealt"
        self._dealt = True
        return out

    _dealt = False

    def _on_abort(self, reason: str) -> list[Message]:
        if self._dealt:
            return []  # the round no longer depends on the dealer: never end it from here
        if self.abort_reason and self.abort_reason.startswith(f"{self.config.publisher} "):
            return []
        return [self._send(self.config.publisher, Kind.ABORT, {"reason": reason[:500]})]


def __getattr__(name: str) -> Any:
    """``Publisher``: the deprecated name of :class:`FederatedPublisher` (warns)."""
    if name == "Publisher":
        warnings.warn(
            "ppdp.federated.roles.Publisher is deprecated: use FederatedPublisher "
            "(ppdp.publish.Publisher is the base of the table publishers)",
            DeprecationWarning,
            stacklevel=user_stacklevel(),
        )
        return FederatedPublisher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
