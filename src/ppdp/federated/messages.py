"""Signed protocol messages of the multi-party publishing round, and their validation.

Every message of a round is a :class:`Message`: who sends it to whom, in which session,
its position in the sender's stream to that recipient (``seq``), its kind, a JSON-safe
payload and an Ed25519 signature by the sender. The transport (in-process routing in
:func:`ppdp.federated.simulate_round`, HTTP in :mod:`ppdp.federated.http`) only moves
:meth:`Message.to_json` text around; everything that matters is checked by a
:class:`MessageValidator` at the receiver.

Signed bytes
------------
``DOMAIN ‖ canonical_dumps(header)`` with ``header = {session_id, sender, recipient, seq,
kind, payload_sha256}`` and ``payload_sha256 = SHA-256(canonical_dumps(payload))`` in hex;
:func:`ppdp.ledger.canonical_dumps` gives exactly one byte string per value (sorted keys,
no whitespace, floats as tagged ``float.hex``). Signing the payload's digest rather than the
payload lets the publisher's ledger hold a verifiable *envelope* of each message (header,
digest, signature; :meth:`Message.envelope`) without the share values: see
``docs/federated.md`` for why the shares themselves must not be replicated to the owners.
Share payloads carry a random ``salt`` so that their digest hides them (computationally).

Arrays travel as ``{"shape": [...], "data": base64 of float64 little-endian}``
(:func:`encode_array` / :func:`decode_array`); decoding refuses NaN and infinities.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import math
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from numpy.typing import ArrayLike, NDArray

from ppdp.exceptions import ParameterError, ParameterTypeError, ProtocolError
from ppdp.ledger import (
    CanonicalFormError,
    Signer,
    canonical_dumps,
    canonical_loads,
    check_signer_id,
    decode_public_key,
    verify_signature,
)

__all__ = [
    "DOMAIN",
    "MAX_MESSAGE_BYTES",
    "ArraySpec",
    "Kind",
    "Message",
    "MessageFields",
    "MessageValidator",
    "OptionalField",
    "OutOfOrderError",
    "PayloadSpec",
    "ReplayError",
    "UnauthenticatedError",
    "check_party_id",
    "check_payload",
    "check_session_id",
    "decode_array",
    "encode_array",
    "new_salt",
    "new_session_id",
    "payload_digest",
    "sign",
    "signing_bytes",
    "verify",
    "verify_envelope",
]

#: Domain separation: a message signature is never valid as a ledger entry or checkpoint one.
DOMAIN = b"ppdp-federated-message-v1\x00"
#: Largest accepted wire message (bytes of :meth:`Message.to_json`).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_KIND = re.compile(r"[a-z][a-z-]{0,31}")
#: At most this many characters of a value from the wire go into an error or a log line.
_ECHO = 80


def _short(value: object) -> str:
    """``repr(value)``, cut to :data:`_ECHO` characters: errors never echo input unbounded."""
    if isinstance(value, list | dict | tuple) and len(value) > 8:
        return f"<{type(value).__name__} of {len(value)} items>"
    text = repr(value)
    return text if len(text) <= _ECHO else text[: _ECHO - 3] + "..."


_MESSAGE_KEYS = {"session_id", "sender", "recipient", "seq", "kind", "payload", "signature"}
_ENVELOPE_KEYS = {"session_id", "sender", "recipient", "seq", "kind", "payload_sha256", "signature"}


class Kind(enum.StrEnum):
    """The message kinds of a round, in protocol order (``docs/federated.md``)."""

    ROUND_START = "round-start"  # publisher -> owners, dealer: the round's parameters
    LEDGER_ENTRIES = "ledger-entries"  # publisher -> owners: rows for the replicas
    DEALER_SHARE = "dealer-share"  # dealer -> one owner: its zero-sum masks (confidential)
    KEY_SHARE = "key-share"  # owner -> owner: X25519 public key (dealer="none")
    COMMITMENT = "commitment"  # owner -> publisher: digests of its shares (before the spend)
    MEAN_SHARE = "mean-share"  # owner -> publisher: masked, noisy partial class means
    NOISY_MEANS = "noisy-means"  # publisher -> owners: the DP class means
    SCATTER_SHARE = "scatter-share"  # owner -> publisher: masked, noisy partial second moment
    RESULT = "result"  # publisher -> owners: the direction(s)
    PROJECTIONS = "projections"  # owner -> publisher: projected records (noisy or raw)
    RELEASE = "release"  # publisher -> owners, dealer: what was released, round closed
    ABORT = "abort"  # anyone -> anyone: the round is over, nothing released


class ReplayError(ProtocolError):
    """A message whose sequence number was already delivered (a copy): dropped, not counted."""


class UnauthenticatedError(ProtocolError):
    """A message that does not authenticate as this round's, from a pinned key, to this party.

    Wrong session, unknown sender, another recipient or a signature that does not verify:
    anybody can send such a message, so it is dropped and logged and never changes a
    round's state (``docs/federated.md``, "Outsiders and the charge point").
    """


class OutOfOrderError(ProtocolError):
    """A message that arrived before an earlier one of the same sender (hold it, or reject)."""


def check_session_id(session_id: object) -> str:
    """A session id: 1-64 characters from letters, digits and ``_.:-``."""
    if not isinstance(session_id, str):
        raise ParameterTypeError(
            f"session_id ({_short(session_id)}) must be a str, not {type(session_id).__name__}"
        )
    if not _SESSION_ID.fullmatch(session_id):
        raise ParameterError(
            f"session_id ({_short(session_id)}) must be 1-64 characters: letters, digits and _.:- "
            "(starting with a letter or digit)"
        )
    return session_id


def check_party_id(party_id: object, name: str = "party id") -> str:
    """A party id: the same alphabet as ledger signer ids (parties sign ledger entries)."""
    try:
        return check_signer_id(party_id)
    except ParameterTypeError:
        raise ParameterTypeError(
            f"{name} ({_short(party_id)}) must be a str, not {type(party_id).__name__}"
        ) from None
    except ParameterError:
        raise ParameterError(
            f"{name} ({_short(party_id)}) must be 1-64 characters: letters, digits and _.@:+- "
            "(starting with a letter or digit)"
        ) from None


def new_session_id() -> str:
    """A fresh random session id (128 bits from the OS CSPRNG, hex)."""
    return secrets.token_hex(16)


def new_salt() -> str:
    """32 random bytes in hex, put into share payloads so that their digest hides them."""
    return secrets.token_hex(32)


# ----------------------------------------------------------------------------- arrays


def encode_array(value: ArrayLike, *, name: str = "array") -> dict[str, Any]:
    """``{"shape": [...], "data": base64(float64 little-endian)}``; refuses NaN and inf."""
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} contains NaN or infinity; only finite values are sent")
    data = np.ascontiguousarray(arr, dtype="<f8").tobytes()
    return {"shape": [int(s) for s in arr.shape], "data": base64.b64encode(data).decode("ascii")}


def decode_array(
    obj: object, *, name: str = "array", shape: tuple[int | None, ...] | None = None
) -> NDArray[np.float64]:
    """Decode :func:`encode_array`'s form, checking shape and finiteness.

    Raises
    ------
    ProtocolError
        Not an encoded array, a shape other than ``shape`` (``None`` entries match any
        length), data of the wrong length, or NaN/inf values.
    """
    if not isinstance(obj, Mapping) or set(obj) != {"shape", "data"}:
        raise ProtocolError(f"{name} must be an encoded array {{'shape': [...], 'data': base64}}")
    raw_shape, data = obj["shape"], obj["data"]
    if (
        not isinstance(raw_shape, list)
        or len(raw_shape) > 4
        or not all(type(s) is int and 0 <= s <= 2**31 for s in raw_shape)
    ):
        raise ProtocolError(
            f"{name} shape ({_short(raw_shape)}) must be a list of at most 4 non-negative ints"
        )
    got = tuple(raw_shape)
    if shape is not None and (
        len(got) != len(shape)
        or any(e is not None and e != g for e, g in zip(shape, got, strict=True))
    ):
        want = tuple("*" if e is None else e for e in shape)
        raise ProtocolError(f"{name} has shape {got}, expected {want}")
    if not isinstance(data, str):
        raise ProtocolError(f"{name} data must be base64 text")
    try:
        buf = base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ProtocolError(f"{name} data is not valid base64") from None
    if len(buf) != 8 * math.prod(got):
        raise ProtocolError(
            f"{name} data holds {len(buf)} bytes, expected {8 * math.prod(got)} for shape {got}"
        )
    arr = np.frombuffer(buf, dtype="<f8").astype(np.float64).reshape(got)
    if not np.all(np.isfinite(arr)):
        raise ProtocolError(f"{name} contains NaN or infinity")
    return arr


@dataclass(frozen=True)
class ArraySpec:
    """Expected shape of an encoded array field (``None`` entries match any length)."""

    shape: tuple[int | None, ...]


@dataclass(frozen=True)
class OptionalField:
    """A field that a party of an older ppdp leaves out: absent, it reads as ``None``.

    New fields are added this way so that a newer receiver still takes an older sender's
    message (``docs/federated.md``, "Versions on the wire"); the receiver decides what an
    absent value means.
    """

    type: type


#: A payload specification: field name -> a Python type (str, int, float, bool, list,
#: dict), an :class:`ArraySpec` or an :class:`OptionalField`. Payloads must have exactly
#: these fields, less any optional ones.
PayloadSpec = Mapping[str, type | ArraySpec | OptionalField]


# ----------------------------------------------------------------------------- messages


def payload_digest(payload: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical payload bytes, hex."""
    return hashlib.sha256(canonical_dumps(dict(payload), name="payload")).hexdigest()


@dataclass(frozen=True)
class MessageFields:
    """The unsigned content of a message (see :func:`sign`)."""

    session_id: str
    sender: str
    recipient: str
    seq: int
    kind: str
    payload: dict[str, Any] = field(hash=False)
    _payload_sha256: str = field(init=False, repr=False, compare=False, hash=False, default="")

    def __post_init__(self) -> None:
        check_session_id(self.session_id)
        check_party_id(self.sender, "sender")
        check_party_id(self.recipient, "recipient")
        if type(self.seq) is not int or self.seq < 0:
            raise ParameterError(f"seq ({_short(self.seq)}) must be an int >= 0")
        if not isinstance(self.kind, str) or not _KIND.fullmatch(self.kind):
            raise ParameterError(
                f"kind ({_short(self.kind)}) must be 1-32 characters: lower-case letters and -"
            )
        if not isinstance(self.payload, Mapping):
            raise ParameterTypeError(
                f"payload ({_short(self.payload)}) must be a mapping, "
                f"not {type(self.payload).__name__}"
            )
        object.__setattr__(self, "kind", str(self.kind))
        # Round-trip through the canonical form: the payload is then plain JSON data, and its
        # digest is taken from exactly the bytes it decodes from.
        raw = canonical_dumps(dict(self.payload), name="payload")
        object.__setattr__(self, "payload", canonical_loads(raw))
        object.__setattr__(self, "_payload_sha256", hashlib.sha256(raw).hexdigest())

    def header(self) -> dict[str, Any]:
        """What the signature covers: every field, with the payload as its SHA-256."""
        return {
            "session_id": self.session_id,
            "sender": self.sender,
            "recipient": self.recipient,
            "seq": self.seq,
            "kind": self.kind,
            "payload_sha256": self._payload_sha256,
        }


def signing_bytes(fields: MessageFields) -> bytes:
    """``DOMAIN ‖ canonical_dumps(header)``: the bytes the sender signs."""
    return DOMAIN + canonical_dumps(fields.header())


def _private_key(key: Ed25519PrivateKey | Signer) -> Ed25519PrivateKey:
    if isinstance(key, Signer):
        return key.private_key
    if isinstance(key, Ed25519PrivateKey):
        return key
    raise ParameterTypeError(
        f"private_key ({type(key).__name__}) must be an Ed25519PrivateKey or a Signer"
    )


def sign(fields: MessageFields, private_key: Ed25519PrivateKey | Signer) -> Message:
    """Sign ``fields`` with the sender's Ed25519 key and return the :class:`Message`."""
    if not isinstance(fields, MessageFields):
        raise ParameterTypeError(f"fields ({fields!r}) must be MessageFields")
    sig = _private_key(private_key).sign(signing_bytes(fields))
    return Message(
        session_id=fields.session_id,
        sender=fields.sender,
        recipient=fields.recipient,
        seq=fields.seq,
        kind=fields.kind,
        payload=fields.payload,
        signature=sig,
    )


@dataclass(frozen=True)
class Message:
    """One signed protocol message (immutable).

    Attributes
    ----------
    session_id : str
        The round; messages of other sessions are rejected.
    sender, recipient : str
        Party ids (pinned to Ed25519 public keys in every party's configuration).
    seq : int
        Position in the sender's stream *to this recipient* in this session: 0, 1, 2, ...
        Copies are dropped (:class:`ReplayError`) and gaps wait (:class:`OutOfOrderError`).
    kind : str
        A :class:`Kind` value.
    payload : dict
        JSON-safe content.
    signature : bytes
        Ed25519 signature of :func:`signing_bytes` (64 bytes).
    """

    session_id: str
    sender: str
    recipient: str
    seq: int
    kind: str
    payload: dict[str, Any] = field(hash=False)
    signature: bytes = field(repr=False)

    @property
    def fields(self) -> MessageFields:
        """The signed content (re-validated)."""
        return MessageFields(
            self.session_id, self.sender, self.recipient, self.seq, self.kind, self.payload
        )

    def signed_bytes(self) -> bytes:
        """The bytes the signature covers."""
        return signing_bytes(self.fields)

    @property
    def payload_sha256(self) -> str:
        """SHA-256 of the canonical payload, hex."""
        return payload_digest(self.payload)

    def envelope(self) -> dict[str, Any]:
        """Header, payload digest and signature: verifiable without the payload (ledger form)."""
        env = self.fields.header()
        env["signature"] = base64.b64encode(self.signature).decode("ascii")
        return env

    def to_json(self) -> str:
        """The canonical wire form (:func:`ppdp.ledger.canonical_dumps`, UTF-8 text)."""
        return canonical_dumps(
            {
                "session_id": self.session_id,
                "sender": self.sender,
                "recipient": self.recipient,
                "seq": self.seq,
                "kind": self.kind,
                "payload": self.payload,
                "signature": base64.b64encode(self.signature).decode("ascii"),
            }
        ).decode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes, *, max_bytes: int = MAX_MESSAGE_BYTES) -> Message:
        """Parse :meth:`to_json` output strictly (the signature is *not* checked here).

        Raises
        ------
        ProtocolError
            Too large, not canonical JSON, missing or extra fields, wrong field types.
        """
        data = text.encode("utf-8") if isinstance(text, str) else text
        if not isinstance(data, bytes):
            raise ProtocolError(f"message must be str or bytes, not {type(text).__name__}")
        if len(data) > max_bytes:
            raise ProtocolError(f"message of {len(data)} bytes exceeds the limit of {max_bytes}")
        try:
            value = canonical_loads(data)
        except (CanonicalFormError, ValueError, RecursionError) as exc:
            raise ProtocolError(f"message is not canonical JSON ({exc})") from None
        if not isinstance(value, dict) or set(value) != _MESSAGE_KEYS:
            raise ProtocolError(
                f"message must have exactly the fields {sorted(_MESSAGE_KEYS)}"
                + (f", got {_short(sorted(value))}" if isinstance(value, dict) else "")
            )
        sig = _decode_signature(value["signature"])
        try:
            fields = MessageFields(
                value["session_id"],
                value["sender"],
                value["recipient"],
                value["seq"],
                value["kind"],
                value["payload"],
            )
        except (ParameterError, ParameterTypeError) as exc:
            raise ProtocolError(f"malformed message: {exc}") from None
        return cls(
            fields.session_id,
            fields.sender,
            fields.recipient,
            fields.seq,
            fields.kind,
            fields.payload,
            sig,
        )


def _decode_signature(value: object) -> bytes:
    if not isinstance(value, str):
        raise ProtocolError("signature must be base64 text")
    try:
        sig = base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ProtocolError("signature is not valid base64") from None
    if len(sig) != 64:
        raise ProtocolError(f"signature has {len(sig)} bytes, expected 64")
    return sig


def verify(message: Message, public_key: Ed25519PublicKey) -> bool:
    """True when ``message`` carries a valid signature under ``public_key``."""
    if not isinstance(message, Message):
        raise ParameterTypeError(f"message ({message!r}) must be a Message")
    if not isinstance(message.signature, bytes) or len(message.signature) != 64:
        return False
    try:
        data = message.signed_bytes()
    except (ParameterError, ParameterTypeError):
        return False
    return verify_signature(public_key, message.signature, data)


def verify_envelope(envelope: Mapping[str, Any], public_key: Ed25519PublicKey) -> bool:
    """True when a ledger envelope (:meth:`Message.envelope`) is validly signed."""
    if not isinstance(envelope, Mapping) or set(envelope) != _ENVELOPE_KEYS:
        return False
    try:
        sig = _decode_signature(envelope["signature"])
        header = {k: envelope[k] for k in _ENVELOPE_KEYS - {"signature"}}
        data = DOMAIN + canonical_dumps(header)
    except (ProtocolError, ParameterError, ParameterTypeError):
        return False
    return verify_signature(public_key, sig, data)


# ----------------------------------------------------------------------------- validation


class MessageValidator:
    """Checks every incoming message of one session at one receiver.

    Parameters
    ----------
    session_id : str
        The round's session id.
    known_keys : mapping of party id to Ed25519 public key
        Every party of the round (pinned in the configuration, never learnt from messages).
    recipient : str, optional
        The receiving party; messages addressed to anyone else are rejected.

    Notes
    -----
    :meth:`validate` runs, in order: type, session, sender key, recipient, signature, kind
    (if ``expected_kinds`` is given), payload fields and array shapes and finiteness (if a
    ``spec`` is given), then the sequence number, which must be exactly the next one from
    that sender: a smaller one is a copy (:class:`ReplayError`), a larger one is early
    (:class:`OutOfOrderError`; :meth:`authenticate` + a buffer turn reordering into
    in-order delivery, see :class:`ppdp.federated.roles.Inbox`). Only a message that passes
    everything advances the sender's counter.

    Examples
    --------
    >>> from ppdp.ledger import Signer
    >>> alice = Signer.generate("alice")
    >>> v = MessageValidator("s1", {"alice": alice.public_key}, recipient="bob")
    >>> m = sign(MessageFields("s1", "alice", "bob", 0, "note", {"x": 1}), alice)
    >>> v.validate(m).payload
    {'x': 1}
    >>> try:
    ...     v.validate(m)
    ... except ReplayError as exc:
    ...     print("dropped:", exc)
    dropped: message seq 0 from 'alice' (note) was already delivered: a replayed copy, dropped
    """

    def __init__(
        self,
        session_id: str,
        known_keys: Mapping[str, Ed25519PublicKey | bytes | str],
        *,
        recipient: str | None = None,
    ) -> None:
        self.session_id = check_session_id(session_id)
        if not isinstance(known_keys, Mapping) or not known_keys:
            raise ParameterError(
                "known_keys must be a non-empty mapping of party id to Ed25519 public key"
            )
        self._keys = {
            check_party_id(k, "known_keys party id"): decode_public_key(v)
            for k, v in known_keys.items()
        }
        self.recipient = None if recipient is None else check_party_id(recipient, "recipient")
        self._next: dict[str, int] = {}

    @property
    def known_parties(self) -> tuple[str, ...]:
        """The party ids whose keys are pinned."""
        return tuple(self._keys)

    def next_seq(self, sender: str) -> int:
        """The next sequence number expected from ``sender``."""
        return self._next.get(sender, 0)

    def authenticate(
        self,
        message: object,
        *,
        expected_kinds: Iterable[str] | None = None,
        spec: PayloadSpec | None = None,
    ) -> Message:
        """Every check except the sequence number; nothing is recorded.

        Raises :class:`UnauthenticatedError` for a message that is not this session's, not
        from a pinned key, not to this recipient, or whose signature does not verify; a
        :class:`ProtocolError` for a wrong kind or payload of an authenticated message.
        """
        if not isinstance(message, Message):
            raise UnauthenticatedError(f"not a Message: {type(message).__name__}")
        if message.session_id != self.session_id:
            raise UnauthenticatedError(
                f"message from {message.sender!r} belongs to session {message.session_id!r}, "
                f"not {self.session_id!r}"
            )
        key = self._keys.get(message.sender)
        if key is None:
            raise UnauthenticatedError(
                f"message from unknown sender {message.sender!r}: no pinned key "
                f"(known: {sorted(self._keys)})"
            )
        if self.recipient is not None and message.recipient != self.recipient:
            raise UnauthenticatedError(
                f"message from {message.sender!r} is addressed to {message.recipient!r}, "
                f"not to {self.recipient!r}"
            )
        if not verify(message, key):
            raise UnauthenticatedError(
                f"message seq {message.seq} from {message.sender!r} ({message.kind}) has an "
                "invalid signature: forged or altered"
            )
        if expected_kinds is not None:
            allowed = {str(k) for k in expected_kinds}
            if message.kind not in allowed:
                raise ProtocolError(
                    f"message kind {message.kind!r} from {message.sender!r} is not expected "
                    f"now (expected: {sorted(allowed)})"
                )
        if spec is not None:
            check_payload(message, spec)
        return message

    def check_sequence(self, message: Message) -> None:
        """Raise unless ``message.seq`` is exactly the next one from its sender."""
        expected = self._next.get(message.sender, 0)
        if message.seq < expected:
            raise ReplayError(
                f"message seq {message.seq} from {message.sender!r} ({message.kind}) was "
                "already delivered: a replayed copy, dropped"
            )
        if message.seq > expected:
            raise OutOfOrderError(
                f"message seq {message.seq} from {message.sender!r} ({message.kind}) arrived "
                f"before seq {expected}: out of order"
            )

    def commit(self, message: Message) -> None:
        """Record ``message`` as delivered (its sender's counter moves on)."""
        self.check_sequence(message)
        self._next[message.sender] = message.seq + 1

    def validate(
        self,
        message: object,
        *,
        expected_kinds: Iterable[str] | None = None,
        spec: PayloadSpec | None = None,
    ) -> Message:
        """Run every check, then record the message as delivered; return it.

        Raises
        ------
        ProtocolError
            Wrong type or session, unknown sender, wrong recipient, bad signature, kind not
            in ``expected_kinds``, payload not matching ``spec`` (fields, shapes, NaN/inf).
        ReplayError
            ``seq`` already delivered (a :class:`ProtocolError`).
        OutOfOrderError
            ``seq`` beyond the next expected one (a :class:`ProtocolError`).
        """
        msg = self.authenticate(message, expected_kinds=expected_kinds, spec=spec)
        self.commit(msg)
        return msg


def check_payload(message: Message, spec: PayloadSpec) -> dict[str, Any]:
    """Check a payload against ``spec``; return it with arrays decoded.

    Raises
    ------
    ProtocolError
        Missing or extra fields, wrong types, array shape mismatch, NaN or inf.
    """
    payload = message.payload
    where = f"{message.kind} payload from {message.sender!r}"
    optional = {k for k, v in spec.items() if isinstance(v, OptionalField)}
    if not set(spec) - optional <= set(payload) <= set(spec):
        also = f" (optionally {sorted(optional)})" if optional else ""
        raise ProtocolError(
            f"{where} has fields {_short(sorted(payload))}, expected exactly "
            f"{sorted(set(spec) - optional)}{also}"
        )
    out: dict[str, Any] = {}
    for name, want in spec.items():
        if isinstance(want, OptionalField):
            if name not in payload:
                out[name] = None
                continue
            want = want.type
        value = payload[name]
        if isinstance(want, ArraySpec):
            out[name] = decode_array(value, name=f"{where}: {name}", shape=want.shape)
            continue
        ok = (
            type(value) is want
            if want in (int, bool)
            else isinstance(value, want) and not isinstance(value, bool)
        )
        if want is float and type(value) is int:
            ok = True
        if not ok:
            raise ProtocolError(
                f"{where}: {name} ({type(value).__name__}) must be of type {want.__name__}"
            )
        if want is float and not math.isfinite(value):
            raise ProtocolError(f"{where}: {name} must be finite")
        out[name] = value
    return out
