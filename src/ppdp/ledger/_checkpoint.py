"""Signed checkpoints: (ledger id, genesis hash, length, head hash), signed by a writer.

A hash chain alone cannot show that entries are *missing* at its end: a ledger cut after
entry k, or restored from an old backup, is still a valid chain. A checkpoint kept
somewhere else records how long the ledger was and what its head was; a ledger that is
shorter, or whose entry at ``length - 1`` has another hash, has been truncated, rolled
back or forked. A ledger *longer* than its checkpoint is normal (a writer stopped between
committing an entry and writing the checkpoint).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp._io import atomic_path
from ppdp.exceptions import LedgerIntegrityError
from ppdp.ledger._canonical import CanonicalFormError, canonical_dumps, canonical_loads
from ppdp.ledger._chain import ChainState, Entry, utc_now
from ppdp.ledger._keys import Signer, verify_signature

__all__ = ["Checkpoint"]

#: Domain separation from entry signatures.
CHECKPOINT_DOMAIN = b"ppdp-ledger-checkpoint-v1\x00"
_TYPE = "ppdp-ledger-checkpoint"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FIELDS = {
    "type",
    "format",
    "ledger_id",
    "genesis_hash",
    "length",
    "head_hash",
    "signer",
    "time",
    "signature",
}


@dataclass(frozen=True)
class Checkpoint:
    """A signed statement "ledger ``ledger_id`` had ``length`` entries ending in ``head_hash``".

    Keep a copy away from the ledger (another machine, another party, a write-once
    store): only a copy the attacker cannot also roll back catches a rollback.
    """

    ledger_id: str
    genesis_hash: bytes
    length: int
    head_hash: bytes
    signer: str
    time: str
    signature: bytes

    def _signed_value(self) -> dict[str, Any]:
        return {
            "type": _TYPE,
            "format": 1,
            "ledger_id": self.ledger_id,
            "genesis_hash": self.genesis_hash.hex(),
            "length": self.length,
            "head_hash": self.head_hash.hex(),
            "signer": self.signer,
            "time": self.time,
        }

    def signed_bytes(self) -> bytes:
        """The exact bytes the signature covers (after the domain prefix)."""
        return canonical_dumps(self._signed_value())

    @classmethod
    def sign(cls, state: ChainState, signer: Signer) -> Checkpoint:
        """A checkpoint of the current head of ``state``, signed by ``signer``."""
        assert state.ledger_id is not None and state.genesis_hash is not None
        unsigned = cls(
            state.ledger_id, state.genesis_hash, state.length, state.head, signer.id, utc_now(), b""
        )
        signature = signer.sign(CHECKPOINT_DOMAIN + unsigned.signed_bytes())
        return cls(
            state.ledger_id,
            state.genesis_hash,
            state.length,
            state.head,
            signer.id,
            unsigned.time,
            signature,
        )

    def to_bytes(self) -> bytes:
        """Canonical JSON including the signature (hex)."""
        return canonical_dumps({**self._signed_value(), "signature": self.signature.hex()})

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "checkpoint") -> Checkpoint:
        """Parse a checkpoint; anything malformed raises LedgerIntegrityError (index None)."""
        try:
            value = canonical_loads(data)
            if (
                not isinstance(value, dict)
                or value.get("type") != _TYPE
                or value.get("format") != 1
            ):
                raise ValueError("not a ppdp ledger checkpoint")
            if set(value) != _FIELDS:
                raise ValueError("unexpected fields")
            length = value["length"]
            if type(length) is not int or length < 1:
                raise ValueError("length is not a positive integer")
            for key in ("genesis_hash", "head_hash"):
                if not isinstance(value[key], str) or not _HEX64.fullmatch(value[key]):
                    raise ValueError(f"{key} is not 64 hex digits")
            if not all(
                isinstance(value[k], str) for k in ("ledger_id", "signer", "time", "signature")
            ):
                raise ValueError("a text field is not text")
            signature = bytes.fromhex(value["signature"])
        except (CanonicalFormError, ValueError, KeyError) as exc:
            raise LedgerIntegrityError(f"{source} is unreadable: {exc}", index=None) from None
        return cls(
            value["ledger_id"],
            bytes.fromhex(value["genesis_hash"]),
            length,
            bytes.fromhex(value["head_hash"]),
            value["signer"],
            value["time"],
            signature,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Checkpoint:
        """Read a checkpoint file (FileNotFoundError if it does not exist)."""
        p = Path(path)
        return cls.from_bytes(p.read_bytes(), source=f"checkpoint {p}")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the checkpoint atomically and durably (file and folder synced)."""
        dest = Path(path)
        with atomic_path(dest) as tmp:
            tmp.write_bytes(self.to_bytes())
        fsync_dir(dest.parent)
        return dest

    def check(self, state: ChainState, entries: list[Entry], *, source: str = "checkpoint") -> None:
        """Raise LedgerIntegrityError unless the verified ledger extends this checkpoint.

        ``state`` and ``entries`` are the result of replaying the whole ledger.
        """
        if self.ledger_id != state.ledger_id or self.genesis_hash != state.genesis_hash:
            raise LedgerIntegrityError(
                f"entry 0: {source} belongs to another ledger (id {self.ledger_id}); "
                "this ledger is a fork or a foreign ledger",
                index=0,
            )
        key = state.keys.get(self.signer)
        if key is None or not verify_signature(
            key, self.signature, CHECKPOINT_DOMAIN + self.signed_bytes()
        ):
            raise LedgerIntegrityError(
                f"{source} signature does not verify for signer {self.signer!r}", index=None
            )
        if state.length < self.length:
            raise LedgerIntegrityError(
                f"entry {state.length}: ledger truncated: it has {state.length} entries but "
                f"{source} records {self.length} (entries {state.length}..{self.length - 1} "
                "are missing: truncation or rollback to an old copy)",
                index=state.length,
            )
        if entries[self.length - 1].hash != self.head_hash:
            raise LedgerIntegrityError(
                f"entry {self.length - 1}: hash differs from {source} "
                "(the ledger was rolled back to an old copy and rewritten, or forked)",
                index=self.length - 1,
            )


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (no-op where folders cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, using the fixed temporary ``<path>.tmp``.

    Only for files written under the ledger's write lock: the fixed temporary name means a
    writer killed mid-write leaves nothing behind that the next writer does not overwrite
    (``atomic_path`` picks a fresh name each time).
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
