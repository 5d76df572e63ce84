"""The collector's durable state: running totals and counts in SQLite, never the reports.

One file holds

* ``meta``: the survey id and the canonical JSON of the collector's *spec* (the
  randomizer's ``to_dict`` and the layout of the totals), fixed when the store is created;
* ``totals``: one row per coordinate of each named running total (a sum of the reports'
  lattice coordinates, a histogram count, ...);
* ``state``: the number of reports and batches accepted;
* ``clients``: per authenticated client, the last accepted batch number (``seq``), the
  SHA-256 of that batch's body, and how many batches and reports it sent;
* ``batches``: per accepted batch, its client, ``seq``, body SHA-256 and report count, so
  that a re-sent batch (a client resuming from its journal after the collector or the
  connection died) is recognised and acknowledged, never counted twice: each batch id
  ``(client, seq)`` counts once.

Durability: WAL journal, ``synchronous=FULL``, and one ``BEGIN IMMEDIATE`` transaction per
batch: a batch is counted whole or not at all, and a crash never leaves half a batch in
the totals. No table has a row per report (``batches`` has one small row per batch).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError

__all__ = ["FORMAT", "AddResult", "CollectorStore", "Layout", "StoreTotals"]

logger = logging.getLogger(__name__)

FORMAT = "ppdp-local-collector-1"

#: name -> (length, "int" | "float"): the running totals a store keeps.
Layout = Mapping[str, tuple[int, Literal["int", "float"]]]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS totals (
    name TEXT NOT NULL, idx INTEGER NOT NULL, value NOT NULL, PRIMARY KEY (name, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS state (
    id INTEGER PRIMARY KEY CHECK (id = 0), reports INTEGER NOT NULL, batches INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS clients (
    client TEXT PRIMARY KEY, last_seq INTEGER NOT NULL, last_digest TEXT NOT NULL,
    batches INTEGER NOT NULL, reports INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batches (
    client TEXT NOT NULL, seq INTEGER NOT NULL, digest TEXT NOT NULL, reports INTEGER NOT NULL,
    PRIMARY KEY (client, seq)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class StoreTotals:
    """A consistent snapshot of the store: the totals, the report count, the batch count."""

    count: int
    batches: int
    totals: dict[str, NDArray[Any]] = field(compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (what ``GET /v1/totals`` returns)."""
        return {
            "count": self.count,
            "batches": self.batches,
            "totals": {k: v.tolist() for k, v in self.totals.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], layout: Layout) -> StoreTotals:
        """Inverse of :meth:`to_dict`, checked against ``layout``."""
        raw = data.get("totals")
        if not isinstance(raw, Mapping) or set(raw) != set(layout):
            raise DataValidationError(
                f"totals must name exactly {sorted(layout)}, got "
                f"{sorted(raw) if isinstance(raw, Mapping) else raw!r}"
            )
        totals = {}
        for name, (size, kind) in layout.items():
            arr = np.asarray(raw[name], dtype=np.int64 if kind == "int" else np.float64)
            if arr.shape != (size,):
                raise DataValidationError(f"totals[{name!r}] must have {size} entries")
            totals[name] = arr
        return cls(int(data["count"]), int(data["batches"]), totals)


@dataclass(frozen=True)
class AddResult:
    """What :meth:`CollectorStore.add_batch` did: ``accepted`` reports (0 for a batch
    already accepted under the same id and body, which is recognised and not counted
    twice) and the new count."""

    accepted: int
    count: int
    duplicate: bool = False


def _check_layout(layout: Layout) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    if not layout:
        raise ParameterError("layout ({}) must name at least one running total")
    for name, spec in layout.items():
        size, kind = spec
        if not isinstance(name, str) or not name:
            raise ParameterError(f"layout name ({name!r}) must be a non-empty string")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ParameterError(f"layout[{name!r}] length ({size!r}) must be an integer >= 1")
        if kind not in ("int", "float"):
            raise ParameterError(f"layout[{name!r}] kind ({kind!r}) must be 'int' or 'float'")
        out[name] = (size, kind)
    return out


class CollectorStore:
    """Running totals of one survey in a SQLite file (thread-safe; one writer at a time).

    Use :meth:`open`. The store never sees a report: :meth:`add_batch` takes the batch's
    *aggregates* (the per-batch sums the randomizer's estimator needs), adds them to the
    totals and bumps the counts in one transaction.

    Examples
    --------
    >>> import tempfile, os, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> s = CollectorStore.open(os.path.join(d, "c.sqlite"), survey="demo",
    ...                         spec={"k": 3}, layout={"sum": (3, "int")})
    >>> s.add_batch(client="a", seq=1, digest="x", count=2,
    ...             aggregates={"sum": np.array([1, 0, 1])}).count
    2
    >>> s.snapshot().totals["sum"].tolist()
    [1, 0, 1]
    >>> s.close()
    """

    def __init__(self, conn: sqlite3.Connection, path: Path, survey: str, spec: dict[str, Any],
                 layout: dict[str, tuple[int, str]]) -> None:  # fmt: skip
        self._conn = conn
        self._lock = threading.Lock()
        self.path = path
        self.survey = survey
        self.spec = spec
        self.layout = layout
        self._int_names = tuple(k for k, (_, kind) in layout.items() if kind == "int")

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        survey: str | None = None,
        spec: Mapping[str, Any] | None = None,
        layout: Layout | None = None,
        create: bool = True,
    ) -> CollectorStore:
        """Open (or create) the store at ``path``.

        Parameters
        ----------
        path : path
            The SQLite file.
        survey, spec, layout
            Required to create a store; when given for an existing store they must match
            what it was created with (a store never mixes two randomizers' reports).
            Omit all three to open an existing store read-write as it is.
        create : bool, default True
            Whether a missing file may be created.

        Raises
        ------
        ParameterError
            Missing file with ``create=False``, a file that is not a collector store, or a
            spec that differs from the store's.
        """
        p = Path(path)
        exists = p.exists()
        if not exists and not create:
            raise FileNotFoundError(f"store ({p}) does not exist")
        if not exists and (survey is None or spec is None or layout is None):
            raise ParameterError(f"store ({p}) does not exist; survey, spec and layout create it")
        p.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(p), isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise ParameterError(f"store ({p}) cannot use the WAL journal (got {mode})")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("BEGIN IMMEDIATE")
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                if survey is None or spec is None or layout is None:
                    raise ParameterError(f"store ({p}) is empty; survey, spec and layout create it")
                checked = _check_layout(layout)
                cls._initialise(conn, survey, dict(spec), checked)
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise ParameterError(
                    f"store ({p}) is not a collector store (an SQLite file the collector "
                    "writes); give the store path from the collector's config"
                ) from None
            raise
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            raise
        try:
            return cls._from_meta(conn, p, meta, survey, spec, layout)
        except BaseException:
            conn.close()
            raise

    @staticmethod
    def _initialise(
        conn: sqlite3.Connection, survey: str, spec: dict[str, Any], layout: dict[str, Any]
    ) -> None:
        rows = [
            ("format", FORMAT),
            ("survey", survey),
            ("spec", json.dumps(spec, sort_keys=True, allow_nan=False)),
            ("layout", json.dumps({k: list(v) for k, v in layout.items()}, sort_keys=True)),
        ]
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", rows)
        for name, (size, kind) in layout.items():
            zero: int | float = 0 if kind == "int" else 0.0
            conn.executemany(
                "INSERT INTO totals (name, idx, value) VALUES (?, ?, ?)",
                ((name, i, zero) for i in range(size)),
            )
        conn.execute("INSERT INTO state (id, reports, batches) VALUES (0, 0, 0)")

    @classmethod
    def _from_meta(
        cls,
        conn: sqlite3.Connection,
        p: Path,
        meta: dict[str, str],
        survey: str | None,
        spec: Mapping[str, Any] | None,
        layout: Layout | None,
    ) -> CollectorStore:
        if meta.get("format") != FORMAT:
            raise ParameterError(f"store ({p}) is not a ppdp collector store ({FORMAT})")
        stored_spec = json.loads(meta["spec"])
        stored_layout = {k: (int(v[0]), str(v[1])) for k, v in json.loads(meta["layout"]).items()}
        if survey is not None and survey != meta["survey"]:
            raise ParameterError(
                f"survey ({survey!r}) differs from the store's ({meta['survey']!r}) in {p}"
            )
        if spec is not None and json.loads(json.dumps(dict(spec), sort_keys=True)) != stored_spec:
            raise ParameterError(
                f"store ({p}) was created for another randomizer or histogram; use a new "
                "store for a new survey design"
            )
        if layout is not None and _check_layout(layout) != stored_layout:
            raise ParameterError(f"store ({p}) keeps other running totals than requested")
        return cls(conn, p, meta["survey"], stored_spec, stored_layout)

    # -- use ----------------------------------------------------------------------------

    def _check_aggregates(self, aggregates: Mapping[str, Any]) -> list[tuple[Any, str, int]]:
        if set(aggregates) != set(self.layout):
            raise DataValidationError(
                f"aggregates must name exactly {sorted(self.layout)}, got {sorted(aggregates)}"
            )
        updates: list[tuple[Any, str, int]] = []
        for name, (size, kind) in self.layout.items():
            arr = np.asarray(aggregates[name])
            if arr.shape != (size,):
                raise DataValidationError(f"aggregates[{name!r}] must have shape ({size},)")
            if kind == "int":
                if arr.dtype.kind not in "iu":
                    raise DataValidationError(f"aggregates[{name!r}] must be integers")
                nz = np.flatnonzero(arr)
                updates.extend((int(arr[i]), name, int(i)) for i in nz)
            else:
                arr = arr.astype(np.float64)
                if not np.all(np.isfinite(arr)):
                    raise DataValidationError(f"aggregates[{name!r}] must be finite")
                nz = np.flatnonzero(arr)
                updates.extend((float(arr[i]), name, int(i)) for i in nz)
        return updates

    def add_batch(
        self, *, client: str, seq: int, digest: str, count: int, aggregates: Mapping[str, Any]
    ) -> AddResult:
        """Add one batch's aggregates and ``count`` reports, all or nothing.

        Each batch id ``(client, seq)`` counts once. A batch already accepted under the same
        ``seq`` with the same body ``digest`` (a retry, or a client resuming from its
        journal) is acknowledged with ``duplicate=True`` and not counted again; the same
        ``seq`` with another body raises :class:`ProtocolError`. A new ``seq`` must exceed
        the client's last accepted one (else :class:`ProtocolError`: replayed or stale).
        Any failure (including a total that would overflow SQLite's 64-bit integers) rolls
        the whole batch back.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise DataValidationError(f"count ({count!r}) must be an integer >= 1")
        updates = self._check_aggregates(aggregates)
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                seen = conn.execute(
                    "SELECT digest FROM batches WHERE client = ? AND seq = ?", (client, seq)
                ).fetchone()
                if seen is not None:
                    if seen[0] == digest:
                        conn.execute("ROLLBACK")
                        return AddResult(0, self._count_unlocked(), duplicate=True)
                    raise ProtocolError(
                        f"seq ({seq}) of client {client!r} was already accepted with another "
                        "body: a replayed or stale batch (each batch id counts once)"
                    )
                row = conn.execute(
                    "SELECT last_seq, last_digest FROM clients WHERE client = ?", (client,)
                ).fetchone()
                if row is not None and seq <= row[0]:
                    if seq == row[0] and digest == row[1]:
                        conn.execute("ROLLBACK")
                        return AddResult(0, self._count_unlocked(), duplicate=True)
                    raise ProtocolError(
                        f"seq ({seq}) of client {client!r} is not above its last accepted "
                        f"batch ({row[0]}): a replayed or stale batch"
                    )
                conn.executemany(
                    "UPDATE totals SET value = value + ? WHERE name = ? AND idx = ?", updates
                )
                if (
                    self._int_names
                    and conn.execute(
                        "SELECT 1 FROM totals WHERE typeof(value) != 'integer' AND name IN "
                        f"({','.join('?' * len(self._int_names))}) LIMIT 1",
                        self._int_names,
                    ).fetchone()
                ):
                    raise DataValidationError(
                        "the batch would overflow a running total (64-bit integers)"
                    )
                conn.execute(
                    "UPDATE state SET reports = reports + ?, batches = batches + 1 WHERE id = 0",
                    (count,),
                )
                conn.execute(
                    "INSERT INTO clients (client, last_seq, last_digest, batches, reports) "
                    "VALUES (?, ?, ?, 1, ?) ON CONFLICT (client) DO UPDATE SET "
                    "last_seq = excluded.last_seq, last_digest = excluded.last_digest, "
                    "batches = batches + 1, reports = reports + excluded.reports",
                    (client, seq, digest, count),
                )
                conn.execute(
                    "INSERT INTO batches (client, seq, digest, reports) VALUES (?, ?, ?, ?)",
                    (client, seq, digest, count),
                )
                total = self._count_unlocked()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return AddResult(count, total)

    def _count_unlocked(self) -> int:
        return int(self._conn.execute("SELECT reports FROM state WHERE id = 0").fetchone()[0])

    def last_seq(self, client: str) -> int:
        """The client's last accepted ``seq`` (0 if it has sent nothing)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT last_seq FROM clients WHERE client = ?", (client,)
            ).fetchone()
        return 0 if row is None else int(row[0])

    def snapshot(self) -> StoreTotals:
        """The totals and counts, read in one transaction."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                reports, batches = conn.execute(
                    "SELECT reports, batches FROM state WHERE id = 0"
                ).fetchone()
                rows = conn.execute("SELECT name, idx, value FROM totals").fetchall()
            finally:
                conn.execute("COMMIT")
        totals: dict[str, NDArray[Any]] = {}
        for name, (size, kind) in self.layout.items():
            totals[name] = np.zeros(size, dtype=np.int64 if kind == "int" else np.float64)
        for name, idx, value in rows:
            totals[name][idx] = value
        return StoreTotals(int(reports), int(batches), totals)

    def close(self) -> None:
        """Close the database (checkpointing the WAL)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> CollectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
