"""Ledger entries on the wire: ``GET /ledger/entries?since=N`` and replica sync.

An entry travels as its stored row (index, prev_hash, kind, body, signer, signature,
hash) in JSON, bytes in base64. The receiver re-derives the entry from those bytes and
verifies it as the next entry of its replica (:meth:`ppdp.ledger.Ledger.append_entry`),
so a server can never slip in an entry the chain does not accept.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from ppdp.exceptions import ProtocolError
from ppdp.ledger import Entry, Ledger, canonical_loads

__all__ = ["entry_from_wire", "entry_to_wire", "sync_replica"]


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def entry_to_wire(entry: Entry) -> dict[str, Any]:
    """The stored row of ``entry`` as a JSON-safe mapping."""
    return {
        "index": entry.index,
        "prev_hash": _b64(entry.prev_hash),
        "kind": entry.kind,
        "body": _b64(entry.body),
        "signer": entry.signer,
        "signature": _b64(entry.signature),
        "hash": _b64(entry.hash),
    }


def entry_from_wire(raw: Mapping[str, Any]) -> Entry:
    """Rebuild an (unverified) :class:`Entry` from :func:`entry_to_wire` output.

    Only the bytes count: a replica verifies them with ``append_entry`` before storing.
    """
    try:
        body = base64.b64decode(raw["body"], validate=True)
        value = canonical_loads(body)
        return Entry(
            index=int(raw["index"]),
            kind=str(raw["kind"]),
            payload=value["payload"] if isinstance(value, dict) else {},
            signer=str(raw["signer"]),
            time=str(value.get("time", "")) if isinstance(value, dict) else "",
            prev_hash=base64.b64decode(raw["prev_hash"], validate=True),
            hash=base64.b64decode(raw["hash"], validate=True),
            signature=base64.b64decode(raw["signature"], validate=True),
            body=body,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"ledger entry on the wire is malformed ({exc})") from None


def sync_replica(replica: Ledger, entries: Iterable[Entry]) -> int:
    """Append the entries the replica lacks, verified, in one transaction; return how many.

    Entries already held must be byte-identical (same hash at the same index); otherwise
    the publisher's ledger forked or was rewritten and
    :class:`~ppdp.exceptions.LedgerIntegrityError` is raised.
    """
    from ppdp.exceptions import LedgerIntegrityError

    added = 0
    with replica.transaction() as txn:
        held = txn.entries()
        for e in entries:
            if e.index < len(held):
                if held[e.index].hash != e.hash:
                    raise LedgerIntegrityError(
                        f"entry {e.index}: the publisher's copy differs from this replica's "
                        "(forked or rewritten ledger)",
                        index=e.index,
                    )
                continue
            txn.append_entry(e)
            held = txn.entries()
            added += 1
    return added
