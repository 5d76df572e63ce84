"""The :class:`Ledger`: an append-only, hash-chained, signed log in one SQLite file."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import random
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ppdp._validation import check_positive
from ppdp.exceptions import LedgerIntegrityError, ParameterError, ParameterTypeError
from ppdp.ledger import _store
from ppdp.ledger._anchor import Anchor, AnchorLike, AnchorRegistry
from ppdp.ledger._chain import (
    ADD_SIGNER,
    GENESIS,
    GENESIS_PREV_HASH,
    REVOKE,
    ChainState,
    Entry,
    check_kind,
    check_reserved_payload,
    genesis_payload,
    make_entry,
)
from ppdp.ledger._checkpoint import Checkpoint, fsync_dir, write_durably
from ppdp.ledger._keys import (
    PublicKeyLike,
    Signer,
    decode_public_key,
    encode_public_key,
    normalise_keys,
)

__all__ = [
    "CheckpointLike",
    "Ledger",
    "LedgerExistsError",
    "LedgerTransaction",
    "NotALedgerError",
    "checkpoint_path_for",
    "refuse_non_ledger",
]

logger = logging.getLogger(__name__)

#: A checkpoint: a :class:`Checkpoint` or the path of a checkpoint file.
CheckpointLike = Checkpoint | str | os.PathLike[str]


def checkpoint_path_for(path: str | os.PathLike[str]) -> Path:
    """Where a ledger's own checkpoint lives: ``<ledger>.checkpoint``."""
    p = Path(path)
    return p.with_name(p.name + ".checkpoint")


class NotALedgerError(LedgerIntegrityError, ParameterError):
    """The file is plainly not a ppdp ledger (a CSV, an empty file, someone else's SQLite
    database) and has no ``<path>.checkpoint`` beside it: a wrong path, not tampering.

    A :class:`~ppdp.exceptions.LedgerIntegrityError` (``index`` None), so code that treats
    any unverifiable ledger as a failure still does, and a
    :class:`~ppdp.exceptions.ParameterError`: the command line reports it as a user error.
    """


#: The first 16 bytes of every SQLite 3 database file.
_SQLITE_MAGIC = b"SQLite format 3\x00"


def refuse_non_ledger(path: Path, *, explicit: bool = False, name: str | None = None) -> None:
    """Raise :class:`NotALedgerError` if ``path`` is plainly not a ppdp ledger (the message
    starts ``name (path)`` when the parameter's ``name`` is given).

    Plainly: no ``<path>.checkpoint`` beside it (every ledger file is created after its
    checkpoint), no checkpoint or anchor given (``explicit``), and the file is empty, is
    not an SQLite database, or is a database holding neither of the ledger's tables. A file
    with a checkpoint beside it is a ledger, whatever its state: verification judges it.
    Reads the file only (never opens it for writing: someone else's database is left as
    it was).
    """
    if explicit or checkpoint_path_for(path).exists():
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError:
        return  # unreadable: the open that follows says why
    if head != _SQLITE_MAGIC:
        why = "an empty file" if not head else "not an SQLite database"
    else:
        try:
            with contextlib.closing(_store.connect(path, busy_timeout=1.0, read_only=True)) as c:
                tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
        except (sqlite3.Error, OSError, LedgerIntegrityError):  # damaged: verification says
            return
        if tables & {"entries", "meta"}:
            return
        why = "an SQLite database without the ledger's tables"
    what = str(path) if name is None else f"{name} ({path})"
    raise NotALedgerError(
        f"{what} is not a ppdp ledger ({why}, and no {checkpoint_path_for(path).name} beside "
        "it): check the path",
        index=None,
    )


#: Seconds ``Ledger.open`` waits for a missing first checkpoint that a writer is about to write.
_FIRST_CHECKPOINT_GRACE = 2.0


def load_checkpoints(
    path: Path | None,
    checkpoint: CheckpointLike | None,
    anchor: AnchorLike | None = None,
    registry: AnchorRegistry | None = None,
    conn: sqlite3.Connection | None = None,
) -> tuple[list[tuple[Checkpoint | Anchor, str]], bool]:
    """The checkpoints and anchors to check (explicit ones first) and whether the local
    checkpoint is missing.

    Read *before* the ledger snapshot: a writer writes a checkpoint only after committing,
    and an anchor is only ever signed for a committed head, so a snapshot taken afterwards
    is at least as long. The anchor on record in ``registry`` is looked up by the dataset
    id of the genesis entry in ``conn`` (read unverified here; the replay verifies it).
    """
    found: list[tuple[Checkpoint | Anchor, str]] = []
    if checkpoint is not None:
        if isinstance(checkpoint, Checkpoint):
            found.append((checkpoint, "the given checkpoint"))
        else:
            cp_path = Path(checkpoint)
            if not cp_path.is_file():
                raise FileNotFoundError(f"checkpoint file {cp_path} does not exist")
            found.append((Checkpoint.load(cp_path), f"checkpoint {cp_path}"))
    if anchor is not None:
        found.append(Anchor.load(anchor))
    if registry is not None and conn is not None:
        dataset_id = _store.peek_dataset_id(conn)
        record = None if dataset_id is None else registry.get(dataset_id)
        if record is not None:
            found.append((record.anchor, f"the anchor on record {record.path}"))
    local_missing = False
    if path is not None:
        local = checkpoint_path_for(path)
        if local.is_file():
            found.append((Checkpoint.load(local), f"checkpoint {local}"))
        else:
            local_missing = True
    return found, local_missing


def check_checkpoints(
    checkpoints: list[tuple[Checkpoint | Anchor, str]],
    local_missing: bool,
    explicit: bool,
    state: ChainState,
    entries: list[Entry],
    label: object,
) -> None:
    """Compare a replayed ledger with its checkpoints and anchors (fail closed).

    A ledger file never exists without its checkpoint (the genesis checkpoint is written
    before the file is linked into place), so a missing one is refused at any length,
    unless a checkpoint or anchor kept elsewhere was given.
    """
    for cp, source in checkpoints:
        cp.check(state, entries, source=source)
    if local_missing and not explicit:
        raise LedgerIntegrityError(
            f"checkpoint file {checkpoint_path_for(label)} (beside the ledger) is missing, and "
            f"the ledger has {state.length} entries: truncation or rollback cannot be ruled out; "
            "restore the checkpoint or pass one kept elsewhere (checkpoint=..., --checkpoint, "
            "anchor=..., --anchor)",
            index=None,
        )


class LedgerExistsError(ParameterError):
    """:meth:`Ledger.create` was asked to create a ledger that already exists."""


class Ledger:
    """An append-only, hash-chained, Ed25519-signed log stored in one SQLite file.

    Every entry is canonical JSON (see :mod:`ppdp.ledger`), chained by SHA-256 to the one
    before it and signed by a signer pinned in the genesis entry. Opening a ledger replays
    and verifies all of it; entries written by other processes are verified as they are
    read (:meth:`refresh`). Nothing unverified is ever returned.

    Use :meth:`create`, :meth:`open`, :meth:`in_memory` or :meth:`create_replica`; do not
    call the constructor.

    Notes
    -----
    ``len(ledger)``, :attr:`head` and :attr:`revoked` describe the entries verified so far;
    :meth:`refresh` (or :meth:`entries`, which refreshes) reads new ones. After each
    committed append the ledger writes ``<path>.checkpoint`` (signed by its local signer);
    keep copies elsewhere to catch a rollback of both files (see ``docs/proofs/ledger.md``).

    Examples
    --------
    >>> from ppdp.ledger import Ledger, Signer
    >>> led = Ledger.in_memory(signer=Signer.generate("custodian"), dataset_id="demo")
    >>> led.append("note", {"text": "hello"}).index
    1
    >>> [e.kind for e in led.entries()]
    ['genesis', 'note']
    """

    def __init__(
        self,
        *,
        _conn: sqlite3.Connection,
        _path: Path | None,
        _state: ChainState,
        _entries: list[Entry],
        _signer: Signer | None,
        _busy_timeout: float = 60.0,
    ) -> None:
        self._busy_timeout = _busy_timeout
        self._conn = _conn
        # closes the connection if the ledger is garbage-collected without close()
        self._finalizer = weakref.finalize(self, _conn.close)
        self._path = _path
        self._state = _state
        self._entries = _entries
        self._signer = _signer
        self._lock = threading.RLock()
        self._in_txn = False
        self._broken: LedgerIntegrityError | None = None

    # -- creation and opening -----------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        signer: Signer,
        dataset_id: str,
        purpose: str = "",
        signers: Mapping[str, PublicKeyLike] | None = None,
        admins: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        busy_timeout: float = 60.0,
        anchor_registry: AnchorRegistry | None = None,
    ) -> Ledger:
        """Create a new ledger file whose genesis entry pins the signers.

        The file is written under a temporary name, its genesis checkpoint
        ``<path>.checkpoint`` is written (exclusively) next, and only then is the file
        linked into place: no ledger file ever exists without its checkpoint.

        Parameters
        ----------
        path : path
            Must not exist. Neither may ``<path>.checkpoint``: a checkpoint without its
            ledger means the ledger was deleted, and a fresh ledger would reset its budget.
            (A checkpoint left by a creator killed before the link is recognised by its
            unfinished file, and that ledger is finished instead: ``LedgerExistsError``.)
        signer : Signer
            Signs the genesis entry, later appends by default, and the checkpoints.
        dataset_id : str
            What the ledger is about (part of the genesis entry).
        purpose : str
            Free text, e.g. ``"budget"`` or ``"multi-party publishing"``.
        signers : mapping of signer id to public key, optional
            Everyone allowed to write (default: just ``signer``). Must include ``signer``.
        admins : iterable of str, optional
            Signers allowed to add and revoke signers (default: just ``signer``). Any signer
            may revoke itself.
        metadata : mapping, optional
            JSON-safe facts pinned in the genesis entry (e.g. the accountant's total).
        busy_timeout : float
            Seconds to wait for another writer's lock.
        anchor_registry : AnchorRegistry, optional
            Refuse to create a ledger for a ``dataset_id`` that has an anchor on record
            there (:meth:`AnchorRegistry.refuse_new_ledger`).
        """
        path = Path(path)
        state, genesis = _genesis(signer, dataset_id, purpose, signers, admins, metadata)
        if path.exists():
            raise LedgerExistsError(f"ledger ({path}) already exists; open it with Ledger.open")
        if anchor_registry is not None:
            anchor_registry.refuse_new_ledger(dataset_id, path)
        if checkpoint_path_for(path).exists():
            _orphan_checkpoint(path)
        try:
            _install(path, genesis, state, signer)
        except _CheckpointExistsError:
            _orphan_checkpoint(path)
        return cls.open(path, signer=signer, busy_timeout=busy_timeout)

    @classmethod
    def create_replica(
        cls,
        path: str | os.PathLike[str],
        genesis: Entry,
        *,
        signer: Signer | None = None,
        busy_timeout: float = 60.0,
    ) -> Ledger:
        """Start a local replica of another party's ledger from its genesis entry.

        Later entries are copied with :meth:`append_entry`; each is verified first. The
        local ``signer`` (a pinned party) signs this replica's checkpoints.
        """
        path = Path(path)
        if not isinstance(genesis, Entry):
            raise ParameterTypeError(f"genesis ({genesis!r}) must be an Entry")
        state = ChainState()
        state.accept(genesis)
        if path.exists():
            raise LedgerExistsError(f"ledger ({path}) already exists; open it with Ledger.open")
        if checkpoint_path_for(path).exists():
            _orphan_checkpoint(path)
        try:
            _install(path, genesis, state, signer if isinstance(signer, Signer) else None)
        except _CheckpointExistsError:
            _orphan_checkpoint(path)
        # Without a local signer there is no checkpoint to write: this handle is the one
        # that created the file; reopening it later needs a checkpoint kept elsewhere.
        return cls.open(path, signer=signer, busy_timeout=busy_timeout, _fresh=signer is None)

    @classmethod
    def in_memory(
        cls,
        *,
        signer: Signer,
        dataset_id: str = "in-memory",
        purpose: str = "",
        signers: Mapping[str, PublicKeyLike] | None = None,
        admins: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Ledger:
        """A ledger in an in-memory SQLite database: same rules, nothing on disk, no checkpoints."""
        state, genesis = _genesis(signer, dataset_id, purpose, signers, admins, metadata)
        conn = _store.connect(None, busy_timeout=0.0)
        _store.init_schema(conn, genesis, state)
        state, entries = _store.replay(conn, label=":memory:")
        return cls(_conn=conn, _path=None, _state=state, _entries=entries, _signer=signer)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        signer: Signer | Ed25519PrivateKey | None = None,
        checkpoint: CheckpointLike | None = None,
        trusted_keys: Mapping[str, PublicKeyLike] | None = None,
        busy_timeout: float = 60.0,
        anchor: AnchorLike | None = None,
        anchor_registry: AnchorRegistry | None = None,
        _fresh: bool = False,
    ) -> Ledger:
        """Open an existing ledger after verifying all of it.

        Parameters
        ----------
        path : path
            The ledger file.
        signer : Signer or Ed25519PrivateKey, optional
            The local signer (needed to append and to write checkpoints); must be pinned and
            not revoked. A bare private key is matched to its signer id by its public key.
            Without a signer the ledger is read-only.
        checkpoint : Checkpoint or path, optional
            A checkpoint kept elsewhere, checked in addition to ``<path>.checkpoint``.
        trusted_keys : mapping of signer id to public key, optional
            The keys the genesis entry must pin, exactly.
        busy_timeout : float
            Seconds to wait for another writer's lock.
        anchor : Anchor, its text, or a file holding it, optional
            An anchor kept elsewhere (``ppdp ledger anchor``): the ledger must be the
            anchored one, at least as long, and extend its head.
        anchor_registry : AnchorRegistry, optional
            Also check the anchor on record there for this ledger's dataset id, if any.

        Raises
        ------
        FileNotFoundError
            ``path`` does not exist.
        LedgerIntegrityError
            Verification failed; ``index`` is the first bad entry.
        """
        path = Path(path)
        timeout = check_positive("busy_timeout", busy_timeout)
        if signer is not None and not isinstance(signer, Signer | Ed25519PrivateKey):
            raise ParameterTypeError(
                f"signer ({signer!r}) must be a Signer or an Ed25519PrivateKey, "
                f"not {type(signer).__name__}"
            )
        if not path.exists():
            raise FileNotFoundError(f"ledger file {path} does not exist")
        if path.is_dir():
            raise ParameterError(f"ledger ({path}) is a folder, not a ledger file")
        refuse_non_ledger(path, explicit=checkpoint is not None or anchor is not None or _fresh)
        conn = _store.connect(path, busy_timeout=timeout)
        try:
            # Another process may sit between committing an entry and writing the first
            # checkpoint of a new ledger: give it a moment before calling that a rollback.
            explicit = checkpoint is not None or anchor is not None or _fresh
            deadline = time.monotonic() + min(timeout, _FIRST_CHECKPOINT_GRACE)
            while True:
                checkpoints, local_missing = load_checkpoints(
                    path, checkpoint, anchor, anchor_registry, conn
                )
                state, entries = _store.replay(conn, label=path, trusted_keys=trusted_keys)
                waiting = local_missing and not explicit
                if not waiting or time.monotonic() >= deadline:
                    break
                time.sleep(0.01)
            check_checkpoints(checkpoints, local_missing, explicit, state, entries, path)
            if isinstance(signer, Ed25519PrivateKey):
                signer = _signer_for_key(state, signer)
            if signer is not None:
                state.check_can_sign(signer)
        except BaseException:
            conn.close()
            raise
        ledger = cls(
            _conn=conn,
            _path=path,
            _state=state,
            _entries=entries,
            _signer=signer,
            _busy_timeout=timeout,
        )
        if signer is not None:
            ledger._write_checkpoint()
        return ledger

    # -- reading ------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The ledger file (None for an in-memory ledger)."""
        return self._path

    @property
    def checkpoint_path(self) -> Path | None:
        """``<path>.checkpoint`` (None for an in-memory ledger)."""
        return None if self._path is None else checkpoint_path_for(self._path)

    @property
    def signer(self) -> Signer | None:
        """The local signer, if the ledger was opened for writing."""
        return self._signer

    @property
    def ledger_id(self) -> str:
        """Random id fixed in the genesis entry."""
        return str(self._state.ledger_id)

    @property
    def dataset_id(self) -> str:
        """The dataset id fixed in the genesis entry."""
        return self._state.dataset_id

    @property
    def purpose(self) -> str:
        """The purpose text fixed in the genesis entry."""
        return self._state.purpose

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata pinned in the genesis entry (a copy)."""
        return copy.deepcopy(self.genesis.payload["metadata"])

    @property
    def genesis(self) -> Entry:
        """Entry 0."""
        return self._entries[0]

    @property
    def head(self) -> bytes:
        """Hash of the last verified entry."""
        return self._state.head

    @property
    def signers(self) -> dict[str, Ed25519PublicKey]:
        """Every signer id ever pinned and its key (including revoked ones)."""
        return dict(self._state.keys)

    @property
    def revoked(self) -> dict[str, int]:
        """Revoked signer id -> index of the revoking entry."""
        return dict(self._state.revoked)

    def __len__(self) -> int:
        return self._state.length

    def __repr__(self) -> str:
        where = self._path if self._path is not None else ":memory:"
        return f"Ledger({where}, {len(self)} entries, head {self.head.hex()[:16]})"

    def refresh(self) -> list[Entry]:
        """Read and verify entries appended by other processes; return the new ones."""
        with self._lock:
            self._check_usable()
            if self._in_txn:
                return []
            before = len(self._entries)
            try:
                self._conn.execute("BEGIN")
                try:
                    self._sync_locked()
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _store.sqlite_error(exc, self._path) from None
            return self._entries[before:]

    def entries(self, start: int = 0, *, refresh: bool = True) -> list[Entry]:
        """Verified entries from index ``start`` on (after a :meth:`refresh` by default)."""
        if refresh:
            self.refresh()
        return self._entries[start:]

    def checkpoint(self) -> Checkpoint:
        """A checkpoint of the current head, signed by the local signer (keep it elsewhere)."""
        if self._signer is None:
            raise ParameterError("signer (None): open the ledger with a signer to sign checkpoints")
        with self._lock:
            return Checkpoint.sign(self._state, self._signer)

    def anchor(self) -> Anchor:
        """A short signed digest of the current head to keep elsewhere (see :class:`Anchor`).

        Signed by the local signer; pass it back as ``anchor=`` to :meth:`open` or
        :func:`ppdp.ledger.verify` (``--anchor`` on the command line).
        """
        if self._signer is None:
            raise ParameterError("signer (None): open the ledger with a signer to sign anchors")
        with self._lock:
            self.refresh()
            return Anchor.sign(self._state, self._signer)

    # -- writing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[LedgerTransaction]:
        """Hold the write lock: read the latest entries, decide, append, commit atomically.

        Inside the block the ledger is up to date (other writers' entries verified) and no
        other writer can append; appends are committed durably when the block exits without
        an exception, and discarded otherwise. The checkpoint is written after the commit.

        Examples
        --------
        >>> from ppdp.ledger import Ledger, Signer
        >>> led = Ledger.in_memory(signer=Signer.generate("custodian"))
        >>> with led.transaction() as txn:
        ...     if len(txn) < 5:
        ...         _ = txn.append("note", {"n": len(txn)})
        >>> len(led)
        2
        """
        with self._lock:
            self._check_usable()
            if self._in_txn:
                raise RuntimeError("ledger transactions do not nest")
            self._begin_immediate()
            self._in_txn = True
            try:
                self._sync_locked()
                txn = LedgerTransaction(self, self._state.copy())
                yield txn
                try:
                    self._conn.execute("COMMIT" if txn._pending else "ROLLBACK")
                except sqlite3.Error as exc:  # e.g. disk full: nothing was committed
                    raise _store.sqlite_error(exc, self._path) from None
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                raise
            finally:
                self._in_txn = False
            if txn._pending:
                self._state = txn._state
                self._entries.extend(txn._pending)
                for e in txn._pending:
                    logger.debug("ledger %s: appended entry %d (%s)", self._path, e.index, e.kind)
                self._write_checkpoint(txn._pending[-1].signer)

    def append(
        self, kind: str, payload: Mapping[str, Any], *, signer: Signer | None = None
    ) -> Entry:
        """Append one entry and commit it durably before returning.

        Parameters
        ----------
        kind : str
            Lower-case name of the event (``"spend"``, ``"release"``, ``"round"``, ...);
            ``"genesis"`` is reserved, ``"revoke"`` and ``"add-signer"`` have rules.
        payload : mapping
            JSON-safe content (floats finite; keys strings not starting with ``$``).
        signer : Signer, optional
            Defaults to the ledger's local signer; must be pinned and not revoked.
        """
        with self.transaction() as txn:
            entry = txn.append(kind, payload, signer=signer)
        return entry

    def append_entry(self, entry: Entry) -> Entry:
        """Append an entry signed elsewhere (replication); it is verified first."""
        with self.transaction() as txn:
            stored = txn.append_entry(entry)
        return stored

    def revoke(self, signer_id: str, *, reason: str = "", signer: Signer | None = None) -> Entry:
        """Revoke ``signer_id``: its later entries are rejected. Needs an admin or itself."""
        return self.append(REVOKE, {"signer": signer_id, "reason": str(reason)}, signer=signer)

    def add_signer(
        self,
        signer_id: str,
        public_key: PublicKeyLike,
        *,
        admin: bool = False,
        signer: Signer | None = None,
    ) -> Entry:
        """Pin a new signer (e.g. a rotated key); needs an admin. Ids are never reused."""
        key = encode_public_key(decode_public_key(public_key))
        return self.append(
            ADD_SIGNER,
            {"signer": signer_id, "public_key": key, "admin": bool(admin)},
            signer=signer,
        )

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._finalizer()
            self._broken = self._broken or LedgerIntegrityError("ledger is closed", index=None)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _begin_immediate(self) -> None:
        """Take the file's write lock, polling every millisecond or two.

        SQLite's own busy handler backs off to 100 ms sleeps, which wastes most of the time
        when several processes take turns; short random sleeps hand the lock over quickly.
        """
        deadline = time.monotonic() + self._busy_timeout
        self._conn.execute("PRAGMA busy_timeout = 0")
        try:
            while True:
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    mapped = _store.sqlite_error(exc, self._path)
                    if not isinstance(mapped, TimeoutError) or time.monotonic() > deadline:
                        raise mapped from None
                # jitter only spreads the retries out; it has nothing to do with privacy
                time.sleep(random.uniform(0.0005, 0.002))
        except sqlite3.Error as exc:
            raise _store.sqlite_error(exc, self._path) from None
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise self._broken

    def _sync_locked(self) -> None:
        """Verify rows committed by others since the last read (caller holds a transaction)."""
        try:
            n = self._state.length
            # Only the head is re-read here; older rows are covered by the full check on open.
            if _store.stored_row(self._conn, n - 1) != self._entries[-1].as_row():
                raise LedgerIntegrityError(
                    f"entry {n - 1}: changed or removed under a running writer", index=n - 1
                )
            for row in _store.select_from(self._conn, n):
                self._entries.append(self._state.accept_row(row))
        except LedgerIntegrityError as exc:
            self._broken = exc
            raise
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _store.sqlite_error(exc, self._path) from None

    def _write_checkpoint(self, fallback_signer: str | None = None) -> None:
        """Write ``<path>.checkpoint`` for the current head, under the write lock.

        Taking the lock makes checkpoints monotone: each is written for the head at that
        moment, and the head only grows.
        """
        signer = self._signer
        if self._path is None or signer is None:
            if self._path is not None and fallback_signer is not None:
                logger.info("ledger %s: no local signer, checkpoint not written", self._path)
            return
        cp_path = checkpoint_path_for(self._path)
        with self._lock:
            self._begin_immediate()
            try:
                self._sync_locked()
                if cp_path.is_file():
                    existing = Checkpoint.load(cp_path)
                    existing.check(self._state, self._entries, source=f"checkpoint {cp_path}")
                    if existing.length == self._state.length:
                        return
                write_durably(cp_path, Checkpoint.sign(self._state, signer).to_bytes())
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")


class LedgerTransaction:
    """The view of a ledger inside :meth:`Ledger.transaction` (holds the write lock)."""

    def __init__(self, ledger: Ledger, state: ChainState) -> None:
        self._ledger = ledger
        self._state = state
        self._pending: list[Entry] = []

    def __len__(self) -> int:
        return self._state.length

    @property
    def head(self) -> bytes:
        """Hash of the last entry, including appends in this transaction."""
        return self._state.head

    def entries(self, start: int = 0) -> list[Entry]:
        """Verified entries from ``start`` on, including this transaction's appends."""
        committed = self._ledger._entries
        if start >= len(committed):
            return self._pending[start - len(committed) :]
        return committed[start:] + self._pending

    def append(
        self, kind: str, payload: Mapping[str, Any], *, signer: Signer | None = None
    ) -> Entry:
        """Append an entry (committed when the transaction block exits)."""
        signer = signer if signer is not None else self._ledger._signer
        if signer is None:
            raise ParameterError("signer (None): open the ledger with a signer, or pass signer=")
        if not isinstance(signer, Signer):
            raise ParameterTypeError(f"signer ({signer!r}) must be a Signer")
        check_kind(kind)
        if not isinstance(payload, Mapping):
            raise ParameterTypeError(
                f"payload ({payload!r}) must be a mapping, not {type(payload).__name__}"
            )
        check_reserved_payload(kind, dict(payload))
        self._state.check_can_sign(signer)
        entry = make_entry(self._state.length, self._state.head, kind, dict(payload), signer)
        return self._insert(entry, rules_error=ParameterError)

    def append_entry(self, entry: Entry) -> Entry:
        """Append an entry signed elsewhere, after verifying it as the next entry."""
        if not isinstance(entry, Entry):
            raise ParameterTypeError(f"entry ({entry!r}) must be an Entry")
        if entry.kind == GENESIS:
            raise ParameterError("entry (genesis) cannot be appended; use Ledger.create_replica")
        # Re-derive the entry from its bytes, so a payload object that disagrees with the
        # signed body can never enter this replica's memory.
        derived = self._state.copy().accept_row(entry.as_row())
        return self._insert(derived, rules_error=None)

    def _insert(self, entry: Entry, *, rules_error: type[Exception] | None) -> Entry:
        trial = self._state.copy()
        try:
            trial.accept(entry)
        except LedgerIntegrityError as exc:
            if rules_error is None:
                raise
            raise rules_error(str(exc).split(": ", 1)[-1]) from None
        try:
            self._ledger._conn.execute(_store.INSERT_ENTRY, entry.as_row())
        except sqlite3.Error as exc:
            raise _store.sqlite_error(exc, self._ledger._path) from None
        self._state = trial
        self._pending.append(entry)
        return entry


def _genesis(
    signer: Signer,
    dataset_id: str,
    purpose: str,
    signers: Mapping[str, PublicKeyLike] | None,
    admins: Iterable[str] | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[ChainState, Entry]:
    if not isinstance(signer, Signer):
        raise ParameterTypeError(f"signer ({signer!r}) must be a Signer")
    for name, value in (("dataset_id", dataset_id), ("purpose", purpose)):
        if not isinstance(value, str):
            raise ParameterTypeError(
                f"{name} ({value!r}) must be a str, not {type(value).__name__}"
            )
    if not dataset_id:
        raise ParameterError("dataset_id ('') must be a non-empty string")
    keys = (
        {signer.id: signer.public_key}
        if signers is None
        else normalise_keys(signers, name="signers")
    )
    if signer.id not in keys or encode_public_key(keys[signer.id]) != encode_public_key(
        signer.public_key
    ):
        raise ParameterError(f"signers must pin the creating signer {signer.id!r} with its key")
    admin_list = [signer.id] if admins is None else [str(a) for a in admins]
    if not set(admin_list) <= set(keys):
        raise ParameterError(f"admins ({admin_list!r}) must be pinned signers {sorted(keys)}")
    payload = genesis_payload(
        ledger_id=uuid.uuid4().hex,
        dataset_id=dataset_id,
        purpose=purpose,
        signers=keys,
        admins=admin_list,
        metadata=dict(metadata or {}),
    )
    genesis = make_entry(0, GENESIS_PREV_HASH, GENESIS, payload, signer)
    state = ChainState()
    state.accept(genesis)
    return state, genesis


def _signer_for_key(state: ChainState, key: Ed25519PrivateKey) -> Signer:
    """The active signer id pinned to ``key``'s public key."""
    public = encode_public_key(key.public_key())
    ids = [i for i, k in state.keys.items() if encode_public_key(k) == public and state.active(i)]
    if len(ids) != 1:
        raise ParameterError(
            "signer (private key): its public key is not pinned to exactly one active signer "
            f"of this ledger (matches: {ids})"
        )
    return Signer(ids[0], key)


class _CheckpointExistsError(Exception):
    """Internal: ``<path>.checkpoint`` appeared while a new ledger was being installed."""


def _creating_path(path: Path, ledger_id: object) -> Path:
    """The temporary name of a ledger being created (found again by its ledger id)."""
    return path.with_name(f".{path.name}.{ledger_id}.creating")


def _link_exclusively(tmp: Path, dest: Path) -> None:
    """Link ``tmp`` to ``dest``; FileExistsError if ``dest`` exists (no replacement)."""
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise
    except OSError:  # file systems without hard links: best effort
        if dest.exists():
            raise FileExistsError(dest) from None
        os.replace(tmp, dest)


def _install(path: Path, genesis: Entry, state: ChainState, signer: Signer | None) -> None:
    """Write the file under a temporary name, its checkpoint, then link the file into place.

    The genesis checkpoint is linked in first (exclusively: it fails if a checkpoint is
    there), the ledger file second, so no ledger file is ever without its checkpoint and a
    ledger whose entries after genesis were deleted along with its checkpoint is never
    mistaken for a fresh one. ``os.link`` fails if ``path`` exists, so two processes
    creating the same ledger at once cannot replace each other's file. A crash leaves no
    ledger (perhaps an unfinished file and its checkpoint, which :func:`_orphan_checkpoint`
    recognises) or a whole one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _creating_path(path, state.ledger_id)
    cp_path = checkpoint_path_for(path)
    cp_tmp = cp_path.with_name(f".{cp_path.name}.{state.ledger_id}.creating")
    ours: bytes | None = None
    try:
        _store.write_new_file(tmp, genesis, state)
        if signer is not None:
            data = Checkpoint.sign(state, signer).to_bytes()
            # 0o644 like the ledger file (less the umask): a checkpoint is public (hashes
            # and a signature, meant to be copied elsewhere) and not a program.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            fd = os.open(cp_tmp, flags, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                _link_exclusively(cp_tmp, cp_path)
            except FileExistsError:
                raise _CheckpointExistsError from None
            ours = data
            fsync_dir(path.parent)
        try:
            _link_exclusively(tmp, path)
        except FileExistsError:
            raise LedgerExistsError(
                f"ledger ({path}) already exists; open it with Ledger.open"
            ) from None
        ours = None  # linked: the checkpoint is the ledger's now
    finally:
        if ours is not None and not path.exists():
            with contextlib.suppress(OSError):
                if cp_path.read_bytes() == ours:
                    cp_path.unlink()
        for leftover in (tmp, cp_tmp):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    fsync_dir(path.parent)


def _orphan_checkpoint(path: Path) -> None:
    """``<path>.checkpoint`` exists but ``path`` does not: always raises.

    ``LedgerExistsError`` when another process is creating the ledger right now (its file
    appears within a moment) or when a creator was killed between linking the checkpoint
    and the file (its unfinished file, named by the checkpoint's ledger id, is verified
    against the checkpoint and linked into place); ``LedgerIntegrityError`` otherwise: the
    ledger was deleted or moved, and a new one would reset its history.
    """
    deadline = time.monotonic() + _FIRST_CHECKPOINT_GRACE
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if path.exists() or _finish_interrupted_creation(path):
        raise LedgerExistsError(f"ledger ({path}) already exists; open it with Ledger.open")
    raise LedgerIntegrityError(
        f"ledger {path} does not exist but its checkpoint {checkpoint_path_for(path)} "
        "does: the ledger was deleted or moved; refusing to create a new one in its "
        "place (that would reset its history)",
        index=None,
    )


def _finish_interrupted_creation(path: Path) -> bool:
    """Link the unfinished file of a creator killed after linking its genesis checkpoint."""
    cp_path = checkpoint_path_for(path)
    try:
        cp = Checkpoint.load(cp_path)
    except (OSError, LedgerIntegrityError):
        return False
    unfinished = _creating_path(path, cp.ledger_id)
    if cp.length != 1 or not unfinished.is_file():
        return False
    try:
        conn = _store.connect(unfinished, busy_timeout=1.0, read_only=True)
        try:
            state, entries = _store.replay(conn, label=unfinished)
        finally:
            conn.close()
        cp.check(state, entries, source=f"checkpoint {cp_path}")
    except (LedgerIntegrityError, OSError, sqlite3.Error):
        return False
    with contextlib.suppress(FileExistsError):
        _link_exclusively(unfinished, path)
    for leftover in (unfinished, cp_path.with_name(f".{cp_path.name}.{cp.ledger_id}.creating")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    fsync_dir(path.parent)
    logger.warning("ledger %s: finished a creation interrupted before the file was linked", path)
    return True
