"""The SQLite file under a ledger: schema, connections, and a full replay.

Durability comes from SQLite: ``journal_mode=WAL`` with ``synchronous=FULL`` syncs the
write-ahead log on every commit, and a commit is atomic (present and whole, or absent).
After a crash the next connection rolls the log forward or back by itself, so opening
needs no manual step. Writers serialise with ``BEGIN IMMEDIATE`` (the file's write lock,
across processes) and wait up to ``busy_timeout`` seconds for it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from ppdp.exceptions import LedgerIntegrityError, LedgerIOError, ParameterError
from ppdp.ledger._chain import FORMAT_VERSION, ChainState, Entry
from ppdp.ledger._keys import PublicKeyLike, normalise_keys, same_key

_CREATE_META = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_CREATE_ENTRIES = (
    'CREATE TABLE entries ("index" INTEGER PRIMARY KEY, prev_hash BLOB NOT NULL, '
    "kind TEXT NOT NULL, body BLOB NOT NULL, signer TEXT NOT NULL, signature BLOB NOT NULL, "
    "hash BLOB NOT NULL)"
)
#: Exactly what sqlite_master must hold; a trigger or view slipped into the file is tampering.
_SCHEMA = {
    ("table", "entries", _CREATE_ENTRIES),
    ("table", "meta", _CREATE_META),
    ("index", "sqlite_autoindex_meta_1", None),
}
# Text columns are read as raw bytes with their storage class, so a tampered byte that is
# not UTF-8 is reported at its entry's index rather than as an unreadable file.
_SELECT = (
    'SELECT "index", prev_hash, CAST(kind AS BLOB), typeof(kind), body, '
    "CAST(signer AS BLOB), typeof(signer), signature, hash FROM entries"
)
INSERT_ENTRY = "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)"


_IO_ERRORS = (
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_READONLY",
    "SQLITE_CANTOPEN",
    "SQLITE_NOMEM",
    "SQLITE_PERM",
    "SQLITE_NOLFS",
)


def sqlite_error(exc: sqlite3.Error | UnicodeDecodeError, path: object) -> Exception:
    """Map an sqlite3 error to the error ppdp raises."""
    text = str(exc)
    name = str(getattr(exc, "sqlite_errorname", ""))
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return TimeoutError(f"ledger ({path}) is locked by another writer: {text}")
    if name.startswith(_IO_ERRORS):
        return LedgerIOError(f"ledger ({path}) could not be read or written: {text}")
    return LedgerIntegrityError(f"ledger file {path} is unreadable or corrupt: {text}", index=None)


def _pragmas(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA cell_size_check = ON")


def connect(
    path: Path | None, *, busy_timeout: float, read_only: bool = False
) -> sqlite3.Connection:
    """Open the file (or an in-memory database for ``path=None``) in autocommit mode."""
    try:
        if path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            _pragmas(conn)
            return conn
        if read_only:
            uri = path.resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(
                uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            _pragmas(conn)
            return conn
        conn = sqlite3.connect(
            os.fspath(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        _pragmas(conn)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.close()
            raise ParameterError(
                f"ledger ({path}) could not use SQLite WAL mode (got {mode!r}); "
                "keep ledgers on a local file system"
            )
        conn.execute("PRAGMA synchronous = FULL")
        return conn
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None


def write_new_file(path: Path, genesis: Entry, state: ChainState) -> None:
    """Write a complete one-entry ledger file at ``path`` (which must not exist yet).

    The file is born in WAL mode (the mode is stored in the file): processes that open it
    the moment it appears then find ``PRAGMA journal_mode = WAL`` a no-op, instead of each
    needing the exclusive lock that switching modes takes, which SQLite refuses at once
    (without waiting) to all but one of several readers racing for it."""
    with closing(sqlite3.connect(os.fspath(path), isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        init_schema(conn, genesis, state)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def init_schema(conn: sqlite3.Connection, genesis: Entry, state: ChainState) -> None:
    """Create the tables and insert the genesis entry, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_CREATE_META)
        conn.execute(_CREATE_ENTRIES)
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("format_version", str(FORMAT_VERSION)),
                ("ledger_id", str(state.ledger_id)),
                ("genesis_hash", genesis.hash.hex()),
            ],
        )
        conn.execute(INSERT_ENTRY, genesis.as_row())
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def select_from(conn: sqlite3.Connection, start: int) -> Iterator[tuple[Any, ...]]:
    """Rows with index >= start, in index order, as 7-tuples (see ``Entry.as_row``)."""
    cursor = conn.execute(_SELECT + ' WHERE "index" >= ? ORDER BY "index"', (start,))
    for index, prev_hash, kind, kind_type, body, signer, signer_type, signature, digest in cursor:
        yield (
            index,
            prev_hash,
            _text(kind, kind_type),
            body,
            _text(signer, signer_type),
            signature,
            digest,
        )


def _text(raw: object, storage: str) -> object:
    """The str of a TEXT column, or the raw value (which then fails the type check)."""
    if storage != "text" or not isinstance(raw, bytes):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def stored_row(conn: sqlite3.Connection, index: int) -> tuple[Any, ...] | None:
    """The stored row of entry ``index`` (None if it is gone)."""
    return next(iter(select_from_to(conn, index, index + 1)), None)


def select_from_to(conn: sqlite3.Connection, start: int, stop: int) -> list[tuple[Any, ...]]:
    """Rows with ``start <= index < stop``."""
    rows = []
    for row in select_from(conn, start):
        if row[0] >= stop:
            break
        rows.append(row)
    return rows


def peek_dataset_id(conn: sqlite3.Connection) -> str | None:
    """The dataset id in the genesis entry, *unverified* (None if it cannot be read).

    Used only to choose which anchor on record to check; the full replay verifies the
    genesis entry, and the anchor must then match it.
    """
    from ppdp.ledger._canonical import CanonicalFormError, canonical_loads

    try:
        row = conn.execute('SELECT body FROM entries WHERE "index" = 0').fetchone()
        value = canonical_loads(row[0]) if row is not None else None
    except (sqlite3.Error, CanonicalFormError, TypeError):
        return None
    try:
        dataset_id = value["payload"]["dataset_id"]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    return dataset_id if isinstance(dataset_id, str) else None


def replay(
    conn: sqlite3.Connection,
    *,
    label: object,
    trusted_keys: Mapping[str, PublicKeyLike] | None = None,
    full_check: bool = True,
) -> tuple[ChainState, list[Entry]]:
    """Verify the whole file inside one read snapshot; return the state and the entries.

    Raises LedgerIntegrityError naming the first bad index (None for the file itself).
    """
    pinned = None if trusted_keys is None else normalise_keys(trusted_keys, name="trusted_keys")
    try:
        conn.execute("BEGIN")
        try:
            schema = {
                (t, n, s if t == "table" else None)
                for t, n, s in conn.execute("SELECT type, name, sql FROM sqlite_master")
            }
            if schema != _SCHEMA:
                raise LedgerIntegrityError(
                    f"ledger file {label} does not have the ppdp ledger schema "
                    "(not a ledger, or tables/triggers were added or altered)",
                    index=None,
                )
            if full_check:
                problems = [r[0] for r in conn.execute("PRAGMA integrity_check")]
                if problems != ["ok"]:
                    raise LedgerIntegrityError(
                        f"ledger file {label} is corrupt: {'; '.join(map(str, problems[:3]))}",
                        index=None,
                    )
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            state = ChainState()
            entries = []
            for row in select_from(conn, 0):
                entries.append(state.accept_row(row))
                if len(entries) == 1 and pinned is not None:
                    _check_trusted(state, entries[0], pinned)
        finally:
            conn.execute("COMMIT")
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # text that is not UTF-8: corrupt
        raise sqlite_error(exc, label) from None
    if not entries:
        raise LedgerIntegrityError(f"entry 0: ledger {label} has no genesis entry", index=0)
    if meta.get("format_version") != str(FORMAT_VERSION):
        raise LedgerIntegrityError(
            f"ledger file {label} has format version {meta.get('format_version')!r}; "
            f"this ppdp reads version {FORMAT_VERSION}",
            index=None,
        )
    if set(meta) != {"format_version", "ledger_id", "genesis_hash"} or (
        meta["ledger_id"] != state.ledger_id or meta["genesis_hash"] != entries[0].hash.hex()
    ):
        raise LedgerIntegrityError(
            "entry 0: the ledger id or genesis hash in the file's metadata differs from the "
            "genesis entry (forked or foreign ledger)",
            index=0,
        )
    return state, entries


def _check_trusted(state: ChainState, genesis: Entry, pinned: dict[str, object]) -> None:
    genesis_keys = {k: v for k, v in state.keys.items() if k in genesis.payload["signers"]}
    if set(genesis_keys) != set(pinned) or not all(
        same_key(genesis_keys[k], pinned[k])
        for k in pinned  # type: ignore[arg-type]
    ):
        raise LedgerIntegrityError(
            f"entry 0: the genesis entry pins signers {sorted(genesis_keys)} whose keys "
            f"differ from the trusted keys {sorted(pinned)} (foreign or forged ledger)",
            index=0,
        )
