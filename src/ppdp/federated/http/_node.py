"""The transport runtime of one party: receive, validate, hand to the role, deliver.

A :class:`PartyNode` wraps one transport-agnostic role (``start()``,
``handle(message) -> list[Message]``, ``state``, ``abort(reason)``) and its
:class:`~ppdp.federated.messages.MessageValidator`. For each request to ``POST /messages``:

0. the request is authenticated from its headers before its body is parsed
   (:mod:`ppdp.federated.http._guard`): the sender must be a pinned peer and its
   transport signature must verify over the raw body (``401`` otherwise, the body never
   opened or decoded, the round untouched); the body is capped (``413``);
1. the body is opened (a sealed dealer share is decrypted with the party's X25519 key)
   and decoded (JSON nested deeper than :data:`~ppdp.federated.http._guard.MAX_DEPTH` is
   refused unparsed); a body that is not a message, or a message whose sender is not the
   request's, is refused with ``400``;
2. a byte-identical copy of a message already accepted is refused with ``409`` and
   ``X-PPDP-Duplicate: 1`` (retries are idempotent; the copy is never counted twice);
3. the validator checks sender key, signature, session, sequence number, kind for the
   phase, shapes and finiteness; a refusal is ``422`` with the reason, logged;
4. the role handles the message; its outgoing messages are queued per recipient and
   delivered in order by :class:`~ppdp.federated.http._client.PeerClient`.

Messages are handled one at a time (an ``asyncio.Lock``), so the role never sees two at
once. A watchdog aborts the round when no message moves it forward for
``timeouts.phase`` seconds, or when the whole round exceeds ``timeouts.round``; a peer
that cannot be reached after the retries also aborts it. Aborting is the role's business
(it records the abort; nothing is released), the node only calls ``role.abort(reason)``
and delivers what that returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from ppdp.exceptions import PPDPError, ProtocolError
from ppdp.federated.http._client import DeliveryError, PeerClient, RejectedError
from ppdp.federated.http._config import PeerConfig, Timeouts
from ppdp.federated.http._guard import (
    MAX_DEPTH,
    bounded,
    decode_transport_signature,
    json_too_deep,
    transport_headers,
    verify_transport,
)
from ppdp.federated.http._sealed import SEALED_CONTENT_TYPE, open_sealed, seal

__all__ = ["MessageRefusedError", "NodeStats", "PartyNode", "RoleLike"]

logger = logging.getLogger(__name__)

TERMINAL = ("done", "aborted")
#: Largest accepted request body (a 10,000-row projection message is ~0.3 MB).
MAX_BODY_BYTES = 64 * 1024 * 1024
_KEEP_REJECTIONS = 50


class RoleLike(Protocol):
    """What the node needs from a role (see :mod:`ppdp.federated.roles`)."""

    @property
    def state(self) -> str: ...

    def start(self) -> list[Any]: ...

    def handle(self, message: Any) -> list[Any]: ...

    def abort(self, reason: str) -> Any: ...


class MessageRefusedError(Exception):
    """A request to ``POST /messages`` is refused: HTTP ``status`` and a one-line reason."""

    def __init__(self, status: int, reason: str, *, duplicate: bool = False):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.duplicate = duplicate


@dataclass
class NodeStats:
    """Where one party's time went (seconds) and how much it moved."""

    handle_s: float = 0.0
    validate_s: float = 0.0
    decode_s: float = 0.0
    encode_s: float = 0.0
    send_s: float = 0.0
    received: int = 0
    rejected: int = 0
    sent: int = 0
    sealed_in: int = 0
    sealed_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    rejections: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe copy."""
        d = asdict(self)
        d["rejections"] = list(self.rejections[-20:])
        return d


def _aad(session_id: str, recipient: str) -> bytes:
    return f"ppdp-federated|{session_id}|{recipient}".encode()


class PartyNode:
    """One party's runtime (see the module docstring).

    Parameters
    ----------
    party_id, session_id : str
        This party and the session every message must carry.
    role : RoleLike
        The protocol state machine.
    validate : callable(message), optional
        Checks a message without changing any state (``role.check``); raises
        :class:`~ppdp.exceptions.ProtocolError` to refuse it. ``role.handle`` may refuse
        too (sequence numbers, phases).
    decode, encode : callables
        ``bytes -> message`` and ``message -> bytes`` (canonical JSON of the signed message).
    peers : mapping of party id to PeerConfig
        Where to deliver; a peer with a ``box_public_key`` receives sealed messages when
        ``seal_to`` contains its role.
    timeouts : Timeouts
    box_key : X25519PrivateKey, optional
        This party's key for sealed messages. With it, messages from a dealer must arrive
        sealed.
    seal_to : tuple of str
        Roles of recipients whose messages this party seals (the dealer: ``("owner",)``).
    ledger : Ledger, optional
        Served at ``GET /ledger/entries`` (the publisher's ledger or an owner's replica).
    on_finish : callable, optional
        Called once (in the event loop) when the role reaches a terminal state.
    must_abort : callable(exc, message) -> bool, optional
        Whether a refusal ends the round (default: every refusal except a replayed copy;
        the roles' policy is :func:`ppdp.federated.roles.must_abort`).
    ssl_context : SSLContext, optional
        TLS context for ``https://`` peers (:func:`~ppdp.federated.http._tls.client_context`).
    transport_key : Ed25519PrivateKey or Signer, optional
        This party's Ed25519 key, to sign each outgoing request's transport headers
        (:func:`~ppdp.federated.http._guard.transport_headers`). Without it requests go
        unsigned, and peers refuse them.
    max_body : int
        Largest request body accepted (bytes), after authentication.
    """

    def __init__(
        self,
        *,
        party_id: str,
        role_name: str,
        session_id: str,
        role: RoleLike,
        validate: Callable[[Any], Any] | None,
        decode: Callable[[bytes], Any],
        encode: Callable[[Any], bytes],
        peers: Mapping[str, PeerConfig],
        timeouts: Timeouts,
        box_key: X25519PrivateKey | None = None,
        seal_to: tuple[str, ...] = (),
        ledger: Any = None,
        on_finish: Callable[[PartyNode], None] | None = None,
        must_abort: Callable[[BaseException, Any], bool] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        transport_key: Any = None,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        self.ssl_context = ssl_context
        if transport_key is not None and not isinstance(transport_key, Ed25519PrivateKey):
            transport_key = transport_key.private_key  # a ppdp.ledger.Signer
        self._transport_key: Ed25519PrivateKey | None = transport_key
        self.max_body = int(max_body)
        self.party_id = party_id
        self.role_name = role_name
        self.session_id = session_id
        self.role = role
        self._validate = validate if validate is not None else (lambda m: None)
        self._must_abort = must_abort if must_abort is not None else (lambda e, m: True)
        self._decode = decode
        self._encode = encode
        self.peers = dict(peers)
        self.timeouts = timeouts
        self._box_key = box_key
        self._seal_to = seal_to
        self.ledger = ledger
        self._on_finish = on_finish
        self.stats = NodeStats()
        self.abort_reason: str | None = None
        self._lock = asyncio.Lock()
        self._accepted: dict[tuple[str, int], bytes] = {}
        self._queues: dict[str, asyncio.Queue[tuple[bytes, dict[str, str]] | None]] = {}
        self._workers: list[asyncio.Task[None]] = []
        self._pending = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.finished = asyncio.Event()
        self._last_progress = time.monotonic()
        self._round_started: float | None = None
        self._client: PeerClient | None = None
        self._watchdog: asyncio.Task[None] | None = None

    # -- lifecycle --------------------------------------------------------------------

    @property
    def state(self) -> str:
        """The role's state."""
        return str(self.role.state)

    async def open(self) -> None:
        """Open the HTTP client (before serving: a message may arrive at once)."""
        self._client = PeerClient(
            timeout=self.timeouts.request,
            retries=self.timeouts.retries,
            verify=self.ssl_context if self.ssl_context is not None else True,
        )
        await self._client.__aenter__()
        self.stats.started_at = time.time()

    async def close(self) -> None:
        """Stop the watchdog and the senders; close the client."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for q in self._queues.values():
            q.put_nowait(None)
        for w in self._workers:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(w, timeout=self.timeouts.request)
        if self._client is not None:
            self.stats.send_s = self._client.stats.seconds
            await self._client.aclose()

    async def start(self, *, grace: float = 0.0) -> None:
        """Call ``role.start()``, deliver what it sends, and start the watchdog.

        ``grace`` seconds are added to the first phase timeout (a party that does not
        start the round waits for the publisher's own start-up).
        """
        self._round_started = time.monotonic() + grace
        self._last_progress = self._round_started
        if self._watchdog is None:
            self._watchdog = asyncio.create_task(self._watch())
        async with self._lock:
            t0 = time.perf_counter()
            try:
                out = self.role.start()
            except PPDPError as exc:
                self.abort_reason = f"start failed: {exc}"
                self._abort_locked(self.abort_reason)  # no-op if the role already aborted
                self._check_finished()
                return
            finally:
                self.stats.handle_s += time.perf_counter() - t0
            self._enqueue(out)
            self._check_finished()

    async def drained(self, timeout: float) -> bool:
        """Wait until every queued message was delivered (or failed); False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout=timeout)
        except TimeoutError:
            return False
        return True

    # -- receiving --------------------------------------------------------------------

    def authenticate_request(
        self, sender: str | None, signature: str | None
    ) -> tuple[Ed25519PublicKey, bytes]:
        """From the headers alone: the sender's pinned key and the decoded transport
        signature, or a ``401`` refusal (nothing of the body has been read)."""
        from ppdp.federated.http._guard import SENDER_HEADER

        if sender is None:
            raise self._reject(401, f"the request has no {SENDER_HEADER} header", quiet=True)
        peer = self.peers.get(sender)
        if peer is None:
            raise self._reject(
                401, f"sender ({bounded(sender)}) is not a peer of this party", quiet=True
            )
        try:
            raw = decode_transport_signature(signature)
        except ValueError as exc:
            raise self._reject(401, f"from {sender}: {exc}", quiet=True) from None
        return peer.public_key, raw

    def check_transport(
        self, sender: str, key: Ed25519PublicKey, raw: bytes, digest: bytes
    ) -> None:
        """Refuse (``401``) unless ``raw`` signs a body of SHA-256 ``digest`` from ``sender``."""
        if not verify_transport(
            key, raw, session_id=self.session_id, recipient=self.party_id, digest=digest
        ):
            raise self._reject(
                401,
                f"the transport signature of a request from {sender} does not verify: forged, "
                "altered, or for another session or party",
                quiet=True,
            )

    async def receive(
        self, body: bytes, content_type: str, *, sender: str | None = None
    ) -> dict[str, Any]:
        """Process one ``POST /messages`` body; raise :class:`MessageRefusedError` to refuse it.

        ``sender`` is the party the request was authenticated for (its transport
        signature verified); the message inside must come from it.
        """
        self.stats.bytes_in += len(body)
        t0 = time.perf_counter()
        sealed = content_type.split(";")[0].strip().lower() == SEALED_CONTENT_TYPE
        if sealed:
            if self._box_key is None:
                raise self._reject(415, "this party accepts no sealed messages (no box key)")
            try:
                body = open_sealed(body, self._box_key, aad=_aad(self.session_id, self.party_id))
            except ProtocolError as exc:
                raise self._reject(400, str(exc)) from None
            self.stats.sealed_in += 1
        if json_too_deep(body, MAX_DEPTH):
            raise self._reject(400, f"not a protocol message: JSON nested over {MAX_DEPTH} deep")
        try:
            message = self._decode(body)
        except (PPDPError, ValueError, TypeError, KeyError, RecursionError) as exc:
            raise self._reject(400, f"not a protocol message: {bounded(str(exc), 200)}") from None
        self.stats.decode_s += time.perf_counter() - t0
        if sender is not None and message.sender != sender:
            raise self._reject(
                400, f"a message from {message.sender!r} in a request signed by {sender!r}"
            )
        sender, seq = str(message.sender), int(message.seq)
        if message.recipient != self.party_id:
            raise self._reject(400, f"message for {message.recipient!r} sent to {self.party_id!r}")
        peer = self.peers.get(sender)
        if self._box_key is not None and peer is not None and peer.role == "dealer" and not sealed:
            raise self._reject(400, f"messages from the dealer {sender!r} must arrive sealed")
        digest = hashlib.sha256(body).digest()
        async with self._lock:
            if self._accepted.get((sender, seq)) == digest:
                raise self._reject(
                    409,
                    f"replay: message {sender}#{seq} was already accepted; the copy is ignored",
                    duplicate=True,
                )
            if self.state in TERMINAL:
                raise self._reject(
                    409, f"round is over ({self.state}); message {sender}#{seq} ignored"
                )
            t1 = time.perf_counter()
            try:
                self._validate(message)
            except PPDPError as exc:
                self.stats.validate_s += time.perf_counter() - t1
                raise self._refuse(message, exc, "refused") from None
            self.stats.validate_s += time.perf_counter() - t1
            t2 = time.perf_counter()
            try:
                out = self.role.handle(message)
            except PPDPError as exc:
                self.stats.handle_s += time.perf_counter() - t2
                raise self._refuse(message, exc, "refused by the role") from None
            self.stats.handle_s += time.perf_counter() - t2
            self._accepted[(sender, seq)] = digest
            self.stats.received += 1
            self._last_progress = time.monotonic()
            self._enqueue(out)
            self._check_finished()
            return {"accepted": True, "party": self.party_id, "state": self.state}

    def _refuse(self, message: Any, exc: PPDPError, what: str) -> MessageRefusedError:
        """Map a refusal to an HTTP status; abort the round when the policy says so."""
        reason = f"{message.sender}#{message.seq} {message.kind} {what}: {exc}"
        if self._is_replay(exc):
            return self._reject(409, reason)
        if self._must_abort(exc, message) and self.state not in TERMINAL:
            self._abort_locked(reason)
        self._check_finished()
        return self._reject(422, reason)

    @staticmethod
    def _is_replay(exc: BaseException) -> bool:
        from ppdp.federated.messages import ReplayError

        return isinstance(exc, ReplayError)

    def _reject(
        self, status: int, reason: str, *, duplicate: bool = False, quiet: bool = False
    ) -> MessageRefusedError:
        """Count and log a refusal (``quiet``: unauthenticated requests log at INFO, so a
        stranger cannot flood the warnings); the round is not touched here."""
        self.stats.rejected += 1
        self.stats.rejections.append(f"{status} {reason}")
        if len(self.stats.rejections) > 2 * _KEEP_REJECTIONS:
            del self.stats.rejections[:-_KEEP_REJECTIONS]
        level = logging.INFO if quiet else logging.WARNING
        logger.log(level, "%s rejected a message (%d): %s", self.party_id, status, reason)
        return MessageRefusedError(status, reason, duplicate=duplicate)

    # -- aborting ---------------------------------------------------------------------

    async def abort(self, reason: str) -> None:
        """Abort the round (if still running) and deliver what the role sends about it."""
        async with self._lock:
            self._abort_locked(reason)

    def _abort_locked(self, reason: str) -> None:
        if self.state in TERMINAL:
            return
        logger.warning("%s aborts the round: %s", self.party_id, reason)
        self.abort_reason = self.abort_reason or reason
        try:
            out = self.role.abort(reason)
        except PPDPError as exc:  # e.g. the ledger refused the abort entry
            logger.error("%s: abort(%s) failed: %s", self.party_id, reason, exc)
            out = None
        if isinstance(out, list):
            self._enqueue(out, best_effort=True)
        self._check_finished()

    def _check_finished(self) -> None:
        if self.state in TERMINAL and not self.finished.is_set():
            self.stats.finished_at = time.time()
            if self.state == "aborted" and self.abort_reason is None:
                self.abort_reason = str(getattr(self.role, "abort_reason", None) or "aborted")
            logger.info(
                "%s: round %s %s%s",
                self.party_id,
                self.session_id,
                self.state,
                f": {self.abort_reason}" if self.state == "aborted" else "",
            )
            self.finished.set()
            if self._on_finish is not None:
                self._on_finish(self)

    async def _watch(self) -> None:
        while not self.finished.is_set():
            await asyncio.sleep(0.05)
            now = time.monotonic()
            if self._pending:
                continue  # still delivering: a send failure aborts on its own
            if now - self._last_progress > self.timeouts.phase:
                await self.abort(
                    f"timeout: no message for {self.timeouts.phase:g} s in state "
                    f"{self.state!r} (a party dropped out?)"
                )
            elif (
                self._round_started is not None and now - self._round_started > self.timeouts.round
            ):
                await self.abort(f"timeout: the round took over {self.timeouts.round:g} s")

    # -- sending ----------------------------------------------------------------------

    def _enqueue(self, messages: list[Any] | None, *, best_effort: bool = False) -> None:
        for m in messages or []:
            recipient = str(m.recipient)
            peer = self.peers.get(recipient)
            if peer is None:
                logger.error("%s: no peer %r to deliver %s to", self.party_id, recipient, m.kind)
                if not best_effort:
                    self._abort_locked(f"no address for recipient {recipient!r}")
                continue
            t0 = time.perf_counter()
            body = self._encode(m)
            ctype = "application/json"
            if peer.role in self._seal_to and peer.box_public_key is not None:
                body = seal(body, peer.box_public_key, aad=_aad(self.session_id, recipient))
                ctype = SEALED_CONTENT_TYPE
                self.stats.sealed_out += 1
            headers = {"content-type": ctype}
            if self._transport_key is not None:
                headers.update(
                    transport_headers(
                        body,
                        sender=self.party_id,
                        key=self._transport_key,
                        session_id=self.session_id,
                        recipient=recipient,
                    )
                )
            self.stats.encode_s += time.perf_counter() - t0
            q = self._queues.get(recipient)
            if q is None:
                q = asyncio.Queue()
                self._queues[recipient] = q
                self._workers.append(asyncio.create_task(self._sender(peer, q, best_effort)))
            self._pending += 1
            self._idle.clear()
            q.put_nowait((body, headers))

    async def _sender(
        self,
        peer: PeerConfig,
        q: asyncio.Queue[tuple[bytes, dict[str, str]] | None],
        best_effort: bool,
    ) -> None:
        assert self._client is not None
        failed = False
        while True:
            item = await q.get()
            if item is None:
                return
            body, headers = item
            try:
                if not failed:
                    await self._client.post(f"{peer.url}/messages", body, headers=headers)
                    self.stats.sent += 1
                    self.stats.bytes_out += len(body)
                    self._last_progress = time.monotonic()  # a slow delivery is not a stall
            except (DeliveryError, RejectedError) as exc:
                failed = True  # later messages to this peer would be out of order
                if self.state not in TERMINAL:
                    await self.abort(f"delivery to {peer.id} failed: {exc}")
                else:
                    logger.info("%s: could not tell %s: %s", self.party_id, peer.id, exc)
            finally:
                self._pending -= 1
                if self._pending == 0:
                    self._idle.set()
