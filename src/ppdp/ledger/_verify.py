"""``verify(path)``: check a ledger file end to end without changing it."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp._validation import check_positive
from ppdp.exceptions import ParameterError
from ppdp.ledger import _store
from ppdp.ledger._anchor import AnchorLike, AnchorRegistry
from ppdp.ledger._chain import ChainState, Entry
from ppdp.ledger._keys import PublicKeyLike
from ppdp.ledger._ledger import (
    CheckpointLike,
    check_checkpoints,
    load_checkpoints,
    refuse_non_ledger,
)

__all__ = ["VerificationReport", "verify", "verify_entries"]


@dataclass(frozen=True)
class VerificationReport:
    """What :func:`verify` established about a ledger.

    Attributes
    ----------
    path : Path
        The ledger file.
    ledger_id, dataset_id, purpose : str
        From the genesis entry.
    length : int
        Number of entries (all verified).
    head_hash, genesis_hash : str
        Hexadecimal SHA-256 of the last and the first entry.
    signers : tuple of str
        Every signer id pinned (genesis and later additions).
    revoked : tuple of str
        Signer ids revoked so far.
    checkpoints : tuple of (str, int)
        Each checkpoint and anchor checked: where it came from and the length it records.
    kinds : dict
        Number of entries of each kind.
    """

    path: Path
    ledger_id: str
    dataset_id: str
    purpose: str
    length: int
    head_hash: str
    genesis_hash: str
    signers: tuple[str, ...]
    revoked: tuple[str, ...]
    checkpoints: tuple[tuple[str, int], ...]
    kinds: dict[str, int] = field(default_factory=dict, hash=False)

    def __str__(self) -> str:
        return f"ledger OK: {self.length} entries, head {self.head_hash[:16]}…"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "ok": True,
            "path": os.fspath(self.path),
            "ledger_id": self.ledger_id,
            "dataset_id": self.dataset_id,
            "purpose": self.purpose,
            "length": self.length,
            "head_hash": self.head_hash,
            "genesis_hash": self.genesis_hash,
            "signers": list(self.signers),
            "revoked": list(self.revoked),
            "checkpoints": [{"source": s, "length": n} for s, n in self.checkpoints],
            "kinds": dict(self.kinds),
        }


def verify_entries(
    path: str | os.PathLike[str],
    *,
    checkpoint: CheckpointLike | None = None,
    trusted_keys: Mapping[str, PublicKeyLike] | None = None,
    busy_timeout: float = 60.0,
    anchor: AnchorLike | None = None,
    anchor_registry: AnchorRegistry | None = None,
) -> tuple[VerificationReport, list[Entry]]:
    """Like :func:`verify`, and also return the verified entries."""
    p = Path(path)
    timeout = check_positive("busy_timeout", busy_timeout)
    if not p.exists():
        raise FileNotFoundError(f"ledger file {p} does not exist")
    if p.is_dir():
        raise ParameterError(f"ledger ({p}) is a folder, not a ledger file")
    refuse_non_ledger(p, explicit=checkpoint is not None or anchor is not None)
    conn = _store.connect(p, busy_timeout=timeout, read_only=True)
    try:
        checkpoints, local_missing = load_checkpoints(p, checkpoint, anchor, anchor_registry, conn)
        state, entries = _store.replay(conn, label=p, trusted_keys=trusted_keys)
    finally:
        conn.close()
    explicit = checkpoint is not None or anchor is not None
    check_checkpoints(checkpoints, local_missing, explicit, state, entries, p)
    return _report(p, state, entries, checkpoints), entries


def verify(
    path: str | os.PathLike[str],
    *,
    checkpoint: CheckpointLike | None = None,
    trusted_keys: Mapping[str, PublicKeyLike] | None = None,
    anchor: AnchorLike | None = None,
    anchor_registry: AnchorRegistry | None = None,
) -> VerificationReport:
    """Verify a ledger file completely; raise on the first problem.

    Checks, in order: the file is a readable SQLite database with exactly the ledger
    schema and passes SQLite's integrity check; entry 0 is a valid genesis entry (pinning
    ``trusted_keys`` exactly, if given) matching the file's metadata; every entry has the
    next index, links to the previous hash, hashes correctly, is canonical, and is signed
    by a pinned, unrevoked signer (revocations and key additions are replayed in order);
    and the ledger extends every checkpoint and anchor: the ones given, the anchor on
    record in ``anchor_registry`` for its dataset id, and ``<path>.checkpoint``. A ledger
    without ``<path>.checkpoint`` is rejected unless a checkpoint or anchor is given (a
    ledger file is never created without one). The file is opened read-only and never
    modified.

    Parameters
    ----------
    path : path
        The ledger file.
    checkpoint : Checkpoint or path, optional
        A checkpoint kept elsewhere (another party's, or a copy off this machine).
    trusted_keys : mapping of signer id to public key, optional
        Keys the genesis entry must pin, exactly (catches a foreign ledger re-signed with
        the attacker's own keys).
    anchor : Anchor, its text, or a file holding it, optional
        An anchor kept elsewhere (``ppdp ledger anchor``); the ledger must be the anchored
        ledger, at least as long, with the anchored head at entry ``length - 1``.
    anchor_registry : AnchorRegistry, optional
        Also check the anchor on record there for the ledger's dataset id, if any.

    Returns
    -------
    VerificationReport

    Raises
    ------
    FileNotFoundError
        ``path`` (or the given checkpoint file) does not exist.
    LedgerIntegrityError
        ``index`` is the first bad entry, or None when the file or a checkpoint as a whole
        is unreadable or inconsistent.
    """
    report, _ = verify_entries(
        path,
        checkpoint=checkpoint,
        trusted_keys=trusted_keys,
        anchor=anchor,
        anchor_registry=anchor_registry,
    )
    return report


def _report(
    path: Path, state: ChainState, entries: list[Entry], checkpoints: list[Any]
) -> VerificationReport:
    return VerificationReport(
        path=path,
        ledger_id=str(state.ledger_id),
        dataset_id=state.dataset_id,
        purpose=state.purpose,
        length=state.length,
        head_hash=state.head.hex(),
        genesis_hash=entries[0].hash.hex(),
        signers=tuple(sorted(state.keys)),
        revoked=tuple(sorted(state.revoked)),
        checkpoints=tuple((source, cp.length) for cp, source in checkpoints),
        kinds=dict(Counter(e.kind for e in entries)),
    )
