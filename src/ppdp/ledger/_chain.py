"""Entries, the hash chain and the rules an entry must satisfy to be accepted.

``hash_i = SHA-256(prev_hash_i ‖ body_i)`` with ``prev_hash_0`` = 32 zero bytes and
``prev_hash_i = hash_{i-1}``; each entry carries an Ed25519 signature of
``ENTRY_DOMAIN ‖ hash_i`` by its signer. :class:`ChainState` replays entries one by one
and raises :class:`~ppdp.exceptions.LedgerIntegrityError` naming the first index that
breaks a rule. The same code checks a ledger on open, on every refresh and in
:func:`ppdp.ledger.verify`.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ppdp.exceptions import LedgerIntegrityError, ParameterError, ParameterTypeError
from ppdp.ledger._canonical import CanonicalFormError, canonical_dumps, canonical_loads
from ppdp.ledger._keys import (
    Signer,
    check_signer_id,
    decode_public_key,
    encode_public_key,
    same_key,
    verify_signature,
)

__all__ = ["GENESIS_PREV_HASH", "ChainState", "Entry", "make_entry"]

FORMAT_VERSION = 1
GENESIS_PREV_HASH = bytes(32)
#: Domain separation: an entry signature can never be replayed as a checkpoint signature.
ENTRY_DOMAIN = b"ppdp-ledger-entry-v1\x00"

#: Kinds with rules enforced by the ledger itself; all other kinds are free-form events.
GENESIS = "genesis"
REVOKE = "revoke"
ADD_SIGNER = "add-signer"
_RESERVED = {GENESIS, REVOKE, ADD_SIGNER}
_KIND = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_BODY_KEYS = {"index", "kind", "payload", "signer", "time"}


def check_kind(kind: object) -> str:
    """An entry kind: lower-case letters, digits and ``_.-``, 1-64 characters."""
    if not isinstance(kind, str):
        raise ParameterTypeError(f"kind ({kind!r}) must be a str, not {type(kind).__name__}")
    if not _KIND.fullmatch(kind):
        raise ParameterError(
            f"kind ({kind!r}) must be 1-64 characters: lower-case letters, digits and _.- "
            "(starting with a letter)"
        )
    return kind


@dataclass(frozen=True, repr=False)
class Entry:
    """One verified ledger entry (immutable).

    Attributes
    ----------
    index : int
        Position in the ledger; the order of events comes from it alone.
    kind : str
        ``"genesis"``, ``"spend"``, ``"revoke"``, ``"add-signer"``, ``"release"``, ...
    payload : dict
        The event, exactly as signed (treat it as read-only).
    signer : str
        The signer id that signed the entry.
    time : str
        ISO 8601 UTC time written by the signer; informational only (clocks may skew).
    prev_hash, hash : bytes
        The chain links (32 bytes each).
    signature : bytes
        Ed25519 signature of ``ENTRY_DOMAIN ‖ hash`` (64 bytes).
    body : bytes
        The canonical bytes that were hashed.
    """

    index: int
    kind: str
    payload: dict[str, Any] = field(hash=False)
    signer: str
    time: str
    prev_hash: bytes
    hash: bytes
    signature: bytes
    body: bytes

    def __repr__(self) -> str:
        return (
            f"Entry(index={self.index}, kind={self.kind!r}, signer={self.signer!r}, "
            f"time={self.time!r}, hash={self.hash.hex()[:16]}…, payload={self.payload!r})"
        )

    @property
    def hash_hex(self) -> str:
        """The entry hash in hexadecimal."""
        return self.hash.hex()

    def as_row(self) -> tuple[int, bytes, str, bytes, str, bytes, bytes]:
        """The row stored in the ``entries`` table."""
        return (
            self.index,
            self.prev_hash,
            self.kind,
            self.body,
            self.signer,
            self.signature,
            self.hash,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly view (hashes and signature in hex)."""
        return {
            "index": self.index,
            "kind": self.kind,
            "signer": self.signer,
            "time": self.time,
            "payload": copy.deepcopy(self.payload),
            "prev_hash": self.prev_hash.hex(),
            "hash": self.hash.hex(),
            "signature": self.signature.hex(),
        }


def entry_hash(prev_hash: bytes, body: bytes) -> bytes:
    """``SHA-256(prev_hash ‖ body)``."""
    return hashlib.sha256(prev_hash + body).digest()


def utc_now() -> str:
    """The current UTC time, ISO 8601 with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def make_entry(
    index: int, prev_hash: bytes, kind: str, payload: dict[str, Any], signer: Signer
) -> Entry:
    """Serialise, hash and sign a new entry (no rule checks: see :meth:`ChainState.accept`)."""
    if not isinstance(payload, dict):
        raise ParameterTypeError(
            f"payload ({payload!r}) must be a dict, not {type(payload).__name__}"
        )
    body_value = {
        "index": index,
        "kind": kind,
        "payload": payload,
        "signer": signer.id,
        "time": utc_now(),
    }
    body = canonical_dumps(body_value, name="payload")
    decoded = canonical_loads(body)  # the payload as it will read back (tuples become lists)
    digest = entry_hash(prev_hash, body)
    return Entry(
        index=index,
        kind=kind,
        payload=decoded["payload"],
        signer=signer.id,
        time=decoded["time"],
        prev_hash=prev_hash,
        hash=digest,
        signature=signer.sign(ENTRY_DOMAIN + digest),
        body=body,
    )


def genesis_payload(
    *,
    ledger_id: str,
    dataset_id: str,
    purpose: str,
    signers: dict[str, Ed25519PublicKey],
    admins: list[str],
    metadata: dict[str, Any],
) -> dict[str, Any]:
    """The payload of entry 0: the pinned signers and what the ledger is for."""
    return {
        "format": FORMAT_VERSION,
        "ledger_id": ledger_id,
        "dataset_id": dataset_id,
        "purpose": purpose,
        "signers": {k: encode_public_key(v) for k, v in signers.items()},
        "admins": sorted(admins),
        "metadata": metadata,
    }


class _RejectedError(Exception):
    """Internal: the reason an entry is rejected (converted to LedgerIntegrityError)."""


@dataclass
class ChainState:
    """What a verifier knows after replaying entries ``0 .. length-1``.

    ``keys`` maps every signer id ever pinned to its key; ``revoked`` maps a revoked
    signer id to the index of the entry that revoked it.
    """

    length: int = 0
    head: bytes = GENESIS_PREV_HASH
    genesis_hash: bytes | None = None
    ledger_id: str | None = None
    dataset_id: str = ""
    purpose: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, Ed25519PublicKey] = field(default_factory=dict)
    admins: set[str] = field(default_factory=set)
    revoked: dict[str, int] = field(default_factory=dict)

    def copy(self) -> ChainState:
        """An independent copy (for a transaction that may roll back)."""
        return ChainState(
            self.length,
            self.head,
            self.genesis_hash,
            self.ledger_id,
            self.dataset_id,
            self.purpose,
            self.metadata,
            dict(self.keys),
            set(self.admins),
            dict(self.revoked),
        )

    def active(self, signer_id: str) -> bool:
        """Whether ``signer_id`` is pinned and not revoked."""
        return signer_id in self.keys and signer_id not in self.revoked

    def check_can_sign(self, signer: Signer) -> None:
        """Raise ParameterError unless ``signer`` is pinned with this key and not revoked."""
        known = self.keys.get(signer.id)
        if known is None:
            raise ParameterError(
                f"signer ({signer.id!r}) is not pinned in this ledger; pinned: {sorted(self.keys)}"
            )
        if not same_key(known, signer.public_key):
            raise ParameterError(f"signer ({signer.id!r}) has a different key from the one pinned")
        if signer.id in self.revoked:
            raise ParameterError(
                f"signer ({signer.id!r}) was revoked at entry {self.revoked[signer.id]}"
            )

    def accept_row(self, row: tuple[Any, ...]) -> Entry:
        """Check a stored row as the next entry; update the state and return the entry."""
        expected = self.length
        try:
            if len(row) != 7:
                raise _RejectedError(f"row has {len(row)} columns, expected 7")
            index, prev_hash, kind, body, signer, signature, digest = row
            if type(index) is not int:
                raise _RejectedError("index column is not an integer")
            if index != expected:
                raise _RejectedError(f"index gap: expected entry {expected}, found {index}")
            for col, value, size in (
                ("prev_hash", prev_hash, 32),
                ("signature", signature, 64),
                ("hash", digest, 32),
            ):
                if type(value) is not bytes or len(value) != size:
                    raise _RejectedError(f"{col} column is not {size} bytes")
            if type(body) is not bytes:
                raise _RejectedError("body column is not a BLOB")
            if type(kind) is not str or type(signer) is not str:
                raise _RejectedError("kind or signer column is not text")
            entry = self._parse(index, prev_hash, kind, body, signer, signature, digest)
        except _RejectedError as exc:
            raise LedgerIntegrityError(f"entry {expected}: {exc}", index=expected) from None
        return self.accept(entry)

    def _parse(
        self,
        index: int,
        prev_hash: bytes,
        kind: str,
        body: bytes,
        signer: str,
        signature: bytes,
        digest: bytes,
    ) -> Entry:
        if prev_hash != self.head:
            raise _RejectedError("chain break: prev_hash does not match the previous entry's hash")
        if entry_hash(prev_hash, body) != digest:
            raise _RejectedError("hash mismatch: the body or the stored hash was altered")
        try:
            value = canonical_loads(body)
        except CanonicalFormError as exc:
            raise _RejectedError(f"body is not canonical ({exc})") from None
        if not isinstance(value, dict) or set(value) != _BODY_KEYS:
            raise _RejectedError("body does not have the fields index, kind, payload, signer, time")
        if value["index"] != index or type(value["index"]) is not int:
            raise _RejectedError("body index differs from the row index")
        if value["kind"] != kind or value["signer"] != signer:
            raise _RejectedError("body kind or signer differs from the row")
        if not _KIND.fullmatch(kind):
            raise _RejectedError(f"kind {kind!r} is not a valid entry kind")
        if not isinstance(value["payload"], dict) or not isinstance(value["time"], str):
            raise _RejectedError("payload is not an object or time is not text")
        return Entry(
            index, kind, value["payload"], signer, value["time"], prev_hash, digest, signature, body
        )

    def accept(self, entry: Entry) -> Entry:
        """Check ``entry`` as the next entry (chain, signature, signer rules); apply it."""
        i = self.length
        try:
            if entry.index != i:
                raise _RejectedError(f"index gap: expected entry {i}, found {entry.index}")
            if (
                entry.prev_hash != self.head
                or entry_hash(entry.prev_hash, entry.body) != entry.hash
            ):
                raise _RejectedError("chain break or hash mismatch")
            if i == 0:
                self._genesis(entry)
            elif entry.kind == GENESIS:
                raise _RejectedError("a second genesis entry")
            key = self.keys.get(entry.signer)
            if key is None:
                raise _RejectedError(f"unknown signer {entry.signer!r}")
            if entry.signer in self.revoked:
                raise _RejectedError(
                    f"signer {entry.signer!r} was revoked at entry {self.revoked[entry.signer]}"
                )
            if not verify_signature(key, entry.signature, ENTRY_DOMAIN + entry.hash):
                raise _RejectedError(f"signature does not verify for signer {entry.signer!r}")
            if entry.kind == REVOKE:
                self._revoke(entry)
            elif entry.kind == ADD_SIGNER:
                self._add_signer(entry)
        except _RejectedError as exc:
            raise LedgerIntegrityError(f"entry {i}: {exc}", index=i) from None
        except LedgerIntegrityError:
            raise
        self.length = i + 1
        self.head = entry.hash
        return entry

    def _genesis(self, entry: Entry) -> None:
        p = entry.payload
        if entry.kind != GENESIS:
            raise _RejectedError("entry 0 is not a genesis entry")
        if type(p.get("format")) is not int or p["format"] != FORMAT_VERSION:
            raise _RejectedError(f"unsupported ledger format {p.get('format')!r}")
        expected = {"format", "ledger_id", "dataset_id", "purpose", "signers", "admins", "metadata"}
        if set(p) != expected:
            raise _RejectedError("genesis payload has unexpected fields")
        if not isinstance(p["ledger_id"], str) or not re.fullmatch(r"[0-9a-f]{32}", p["ledger_id"]):
            raise _RejectedError("genesis ledger_id is not 32 hex digits")
        if not isinstance(p["dataset_id"], str) or not isinstance(p["purpose"], str):
            raise _RejectedError("genesis dataset_id or purpose is not text")
        if not isinstance(p["metadata"], dict):
            raise _RejectedError("genesis metadata is not an object")
        if not isinstance(p["signers"], dict) or not p["signers"]:
            raise _RejectedError("genesis pins no signers")
        try:
            keys = {check_signer_id(k): decode_public_key(v) for k, v in p["signers"].items()}
        except (ParameterError, ParameterTypeError, ValueError) as exc:
            raise _RejectedError(f"genesis pins an invalid key ({exc})") from None
        admins = p["admins"]
        if not isinstance(admins, list) or not set(admins) <= set(keys):
            raise _RejectedError("genesis admins are not pinned signers")
        if entry.signer not in keys:
            raise _RejectedError("genesis is not signed by a pinned signer")
        self.keys = keys
        self.admins = set(admins)
        self.ledger_id = p["ledger_id"]
        self.dataset_id = p["dataset_id"]
        self.purpose = p["purpose"]
        self.metadata = p["metadata"]
        self.genesis_hash = entry.hash

    def _revoke(self, entry: Entry) -> None:
        target = entry.payload.get("signer")
        if not isinstance(target, str) or target not in self.keys:
            raise _RejectedError(f"revoke names an unknown signer {target!r}")
        if target in self.revoked:
            raise _RejectedError(f"signer {target!r} is already revoked")
        if entry.signer not in self.admins and entry.signer != target:
            raise _RejectedError(
                f"signer {entry.signer!r} may not revoke {target!r} (not an admin)"
            )
        self.revoked[target] = entry.index

    def _add_signer(self, entry: Entry) -> None:
        if entry.signer not in self.admins:
            raise _RejectedError(f"signer {entry.signer!r} may not add signers (not an admin)")
        new_id = entry.payload.get("signer")
        try:
            check_signer_id(new_id)
            key = decode_public_key(entry.payload.get("public_key"))  # type: ignore[arg-type]
        except (ParameterError, ParameterTypeError, ValueError) as exc:
            raise _RejectedError(f"add-signer payload is invalid ({exc})") from None
        if new_id in self.keys:
            raise _RejectedError(f"signer id {new_id!r} is already pinned (ids are never reused)")
        admin = entry.payload.get("admin", False)
        if not isinstance(admin, bool):
            raise _RejectedError("add-signer admin flag is not a bool")
        self.keys[new_id] = key
        if admin:
            self.admins.add(new_id)


def check_reserved_payload(kind: str, payload: dict[str, Any]) -> None:
    """Refuse to write a reserved kind through the generic append path with a bad payload."""
    if kind == GENESIS:
        raise ParameterError(
            "kind ('genesis') is reserved for entry 0; create a new ledger instead"
        )
    if kind in _RESERVED and not isinstance(payload, dict):
        raise ParameterTypeError(f"payload of a {kind} entry must be a dict")
