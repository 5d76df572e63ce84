"""Ledger entries inside protocol messages, and an in-memory replica."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from ppdp.exceptions import LedgerIntegrityError, ProtocolError
from ppdp.ledger import ChainState, Entry, Ledger

__all__ = ["MemoryReplica", "entry_from_row", "entry_to_row"]

_ROW_KEYS = {"index", "prev_hash", "kind", "body", "signer", "signature", "hash"}


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(value: object, name: str) -> bytes:
    if not isinstance(value, str):
        raise ProtocolError(f"ledger entry {name} must be base64 text")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ProtocolError(f"ledger entry {name} is not valid base64") from None


def entry_to_row(entry: Entry) -> dict[str, Any]:
    """The stored row of ``entry`` as JSON-safe text fields (bytes in base64)."""
    return {
        "index": entry.index,
        "prev_hash": _b64(entry.prev_hash),
        "kind": entry.kind,
        "body": _b64(entry.body),
        "signer": entry.signer,
        "signature": _b64(entry.signature),
        "hash": _b64(entry.hash),
    }


def entry_from_row(raw: object) -> tuple[Any, ...]:
    """The raw row tuple ``(index, prev_hash, kind, body, signer, signature, hash)``.

    Unverified: :class:`~ppdp.ledger.ChainState` checks it as the next entry.
    """
    if not isinstance(raw, Mapping) or set(raw) != _ROW_KEYS:
        raise ProtocolError(f"ledger entry must have exactly the fields {sorted(_ROW_KEYS)}")
    index = raw["index"]
    if type(index) is not int or index < 0:
        raise ProtocolError("ledger entry index must be an int >= 0")
    if not isinstance(raw["kind"], str) or not isinstance(raw["signer"], str):
        raise ProtocolError("ledger entry kind and signer must be text")
    return (
        index,
        _unb64(raw["prev_hash"], "prev_hash"),
        raw["kind"],
        _unb64(raw["body"], "body"),
        raw["signer"],
        _unb64(raw["signature"], "signature"),
        _unb64(raw["hash"], "hash"),
    )


def _row_entry(row: tuple[Any, ...]) -> Entry:
    """An :class:`Entry` carrying ``row`` (payload unparsed); the replica re-derives it."""
    index, prev_hash, kind, body, signer, signature, digest = row
    return Entry(index, kind, {}, signer, "", prev_hash, digest, signature, body)


class MemoryReplica:
    """A verified copy of another party's ledger kept in memory (no file, no checkpoint).

    Every row goes through the same :class:`~ppdp.ledger.ChainState` rules as a file
    replica: hash chain, canonical body, pinned unrevoked signer, Ed25519 signature.
    """

    def __init__(self) -> None:
        self._state = ChainState()
        self._entries: list[Entry] = []

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self, start: int = 0) -> list[Entry]:
        return self._entries[start:]

    def extend(self, rows: list[tuple[Any, ...]]) -> list[Entry]:
        """Verify and append rows (all or nothing); return the new entries."""
        trial = self._state.copy()
        new = [trial.accept_row(row) for row in rows]
        self._state = trial
        self._entries.extend(new)
        return new


class FileReplica:
    """A replica in a ledger file (:meth:`ppdp.ledger.Ledger.create_replica`)."""

    def __init__(self, ledger: Ledger | None, path: Any, signer: Any) -> None:
        self._ledger = ledger
        self._path = path
        self._signer = signer

    @property
    def ledger(self) -> Ledger | None:
        return self._ledger

    def __len__(self) -> int:
        return 0 if self._ledger is None else len(self._ledger)

    def entries(self, start: int = 0) -> list[Entry]:
        return [] if self._ledger is None else self._ledger.entries(start, refresh=False)

    def extend(self, rows: list[tuple[Any, ...]]) -> list[Entry]:
        if not rows:
            return []
        start = 0
        if self._ledger is None:
            genesis = ChainState().accept_row(rows[0])
            self._ledger = Ledger.create_replica(self._path, genesis, signer=self._signer)
            start = 1
        before = len(self._ledger)
        with self._ledger.transaction() as txn:
            for row in rows[start:]:
                txn.append_entry(_row_entry(row))
        return self._ledger.entries(before, refresh=False)

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()


def check_rows_extend(held: int, rows: list[tuple[Any, ...]]) -> None:
    """Rows must start exactly at the replica's length (no gap, no rewrite of held ones)."""
    if rows and rows[0][0] != held:
        raise LedgerIntegrityError(
            f"ledger entries start at index {rows[0][0]}, but the replica holds {held}: "
            "the publisher's ledger was truncated, rolled back or forked, or entries were lost",
            index=min(rows[0][0], held),
        )
