"""The respondent side's report journal: an interrupted ``ppdp local report`` resumes.

Before anything is sent, the client perturbs every value **once**, splits the perturbed
reports into numbered batches and writes them to a journal file (SQLite, synced, and
linked into place whole, so a journal exists only complete). It then posts the batches in
order and marks each one acknowledged, durably, as the collector answers. When the
collector dies or the network goes away, the rerun opens the same journal and posts
exactly the batches not yet acknowledged, byte for byte, under their original numbers:
no value is ever perturbed again. (Fresh noise on a value already reported would let the
collector average the two reports: the local guarantee would compose, ε per report
becoming 2ε.) The collector counts each batch id ``(client, seq)`` once, so a batch it
counted just before the failure, whose answer was lost, is acknowledged as a duplicate
and not added twice.

A finished journal stays: rerunning the command on it sends nothing. Remove it only to
report the same values again on purpose, which spends the guarantee a second time.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.local.collector._wire import encode_batch

__all__ = ["ReportInterruptedError", "ReportJournal", "ReportResult", "deliver", "values_digest"]

logger = logging.getLogger(__name__)

FORMAT = "ppdp-local-report-journal-1"
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE batches (seq INTEGER PRIMARY KEY, start INTEGER NOT NULL, "
    "size INTEGER NOT NULL, reports BLOB NOT NULL, acked INTEGER NOT NULL DEFAULT 0, "
    "duplicate INTEGER NOT NULL DEFAULT 0)",
)


class ReportInterruptedError(ProtocolError):
    """``report`` stopped before every batch was acknowledged.

    Attributes
    ----------
    delivered, remaining, total : int
        Reports acknowledged by the collector (in this run and earlier ones), reports
        still waiting in the journal, and all reports of the journal.
    journal : Path or None
        The journal to resume from (None: none was kept, the remaining reports are lost).
    """

    def __init__(
        self, message: str, *, delivered: int, remaining: int, total: int, journal: Path | None
    ) -> None:
        super().__init__(message)
        self.delivered = delivered
        self.remaining = remaining
        self.total = total
        self.journal = journal


def values_digest(values: Any) -> str:
    """SHA-256 of the values' JSON form: tells a rerun whether it has the same input."""
    arr = np.asarray(values)
    text = json.dumps(arr.tolist(), separators=(",", ":"), default=str, allow_nan=True)
    return hashlib.sha256(f"{arr.dtype.kind}:{text}".encode()).hexdigest()


def _to_blob(reports: NDArray[Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(reports), allow_pickle=False)
    return buf.getvalue()


def _from_blob(blob: bytes) -> NDArray[Any]:
    return np.load(io.BytesIO(blob), allow_pickle=False)


@dataclass(frozen=True)
class JournalBatch:
    """One journaled batch: its number, its first report's position, its reports."""

    seq: int
    start: int
    reports: NDArray[Any]


class ReportJournal:
    """The perturbed reports of one ``report`` run, in numbered batches, with their acks.

    Use :meth:`create` (before sending anything) or :meth:`open` (to resume). ``path=None``
    keeps the journal in memory (nothing survives the process: a failure loses the
    remaining reports, and the error says so).
    """

    def __init__(self, conn: sqlite3.Connection, path: Path | None, lock: Any = None) -> None:
        self._conn = conn
        self.path = path
        self._lock = lock
        self.meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if self.meta.get("format") != FORMAT:
            conn.close()
            raise ParameterError(f"journal ({path}) is not a ppdp report journal ({FORMAT})")
        self.total = int(self.meta["total"])

    # -- creating and opening -------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str] | None,
        *,
        meta: Mapping[str, str],
        batches: list[tuple[int, NDArray[Any]]],
    ) -> ReportJournal:
        """Write a complete journal, durably, and only then make it visible at ``path``.

        ``batches`` are ``(seq, reports)`` in sending order. The file is written under a
        temporary name, synced, and linked into place exclusively (an existing journal is
        never replaced); the folder is synced too.
        """
        rows = []
        start = 0
        for seq, reports in batches:
            rows.append((int(seq), start, len(reports), _to_blob(reports)))
            start += len(reports)
        info = {**meta, "format": FORMAT, "total": str(start), "batches": str(len(rows))}
        if path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            cls._fill(conn, info, rows)
            return cls(conn, None)
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            with contextlib.closing(sqlite3.connect(tmp, isolation_level=None)) as conn:
                conn.execute("PRAGMA synchronous = FULL")
                cls._fill(conn, info, rows)
            _fsync(tmp)
            try:
                os.link(tmp, dest)
            except FileExistsError:
                raise ParameterError(
                    f"journal ({dest}) already exists; rerun to resume it instead"
                ) from None
            _fsync_dir(dest.parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return cls.open(dest)

    @staticmethod
    def _fill(
        conn: sqlite3.Connection, info: Mapping[str, str], rows: list[tuple[Any, ...]]
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        for stmt in _SCHEMA:
            conn.execute(stmt)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(info.items()))
        conn.executemany(
            "INSERT INTO batches (seq, start, size, reports) VALUES (?, ?, ?, ?)", rows
        )
        conn.execute("COMMIT")

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ReportJournal:
        """Open an existing journal (exclusively: one sender at a time)."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"journal ({p}) does not exist")
        lock = _lock(p)
        try:
            conn = sqlite3.connect(p, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA journal_mode = DELETE")
            try:
                return cls(conn, p, lock)
            except sqlite3.DatabaseError:
                conn.close()
                raise
        except sqlite3.DatabaseError as exc:
            _unlock(lock)
            raise ParameterError(f"journal ({p}) is not a readable report journal: {exc}") from None
        except BaseException:
            _unlock(lock)
            raise

    # -- reading ------------------------------------------------------------------------

    def check_matches(self, expected: Mapping[str, str]) -> None:
        """Raise :class:`ParameterError` unless the journal was made for ``expected``."""
        for key, value in expected.items():
            if self.meta.get(key) != value:
                what = {
                    "values_sha256": "other values",
                    "spec": "another randomizer",
                    "survey": "another survey",
                    "client": "another client",
                }.get(key, key)
                if key == "survey":  # survey names are public: say both
                    raise ParameterError(
                        f"journal ({self.path}) was made for survey {self.meta.get(key)!r}, "
                        f"not this run's {value!r}: another survey is another question, so "
                        "give it a journal of its own (journal=PATH, --journal PATH); finish "
                        f"{self.meta.get(key)!r} with its own config"
                    )
                raise ParameterError(
                    f"journal ({self.path}) was made for {what} than this run's; finish it "
                    "with its own input and config, or give another journal path (a new "
                    "journal perturbs afresh)"
                )

    def pending(self) -> Iterator[JournalBatch]:
        """The batches not yet acknowledged, in sending order."""
        rows = self._conn.execute(
            "SELECT seq, start, reports FROM batches WHERE acked = 0 ORDER BY seq"
        ).fetchall()
        for seq, start, blob in rows:
            yield JournalBatch(int(seq), int(start), _from_blob(blob))

    @property
    def delivered(self) -> int:
        """Reports in acknowledged batches."""
        row = self._conn.execute("SELECT COALESCE(SUM(size), 0) FROM batches WHERE acked = 1")
        return int(row.fetchone()[0])

    @property
    def remaining(self) -> int:
        """Reports in batches not yet acknowledged."""
        return self.total - self.delivered

    def reports(self) -> NDArray[Any]:
        """Every journaled report, in order (tests and audits)."""
        blobs = self._conn.execute("SELECT reports FROM batches ORDER BY seq").fetchall()
        return np.concatenate([_from_blob(b) for (b,) in blobs])

    # -- writing ------------------------------------------------------------------------

    def mark_acked(self, seq: int, *, duplicate: bool) -> None:
        """Record, durably, that the collector acknowledged batch ``seq``."""
        self._conn.execute(
            "UPDATE batches SET acked = 1, duplicate = ? WHERE seq = ?", (int(duplicate), seq)
        )

    def close(self) -> None:
        self._conn.close()
        _unlock(self._lock)
        self._lock = None

    def __enter__(self) -> ReportJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync(folder)


def _lock(path: Path) -> Any:
    """An exclusive advisory lock (``flock``) on the journal file (POSIX; a no-op elsewhere).

    SQLite's own locks are ``fcntl`` record locks, independent of this one on Linux.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    fh = open(path, "rb")  # noqa: SIM115 - held until the journal is closed
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise ParameterError(
            f"journal ({path}) is in use by another 'ppdp local report'; wait for it to end"
        ) from None
    return fh


def _unlock(lock: Any) -> None:
    if lock is not None:
        lock.close()  # closing the file releases the lock


# -- sending ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportResult:
    """What :func:`ppdp.local.collector.report` did.

    Attributes
    ----------
    sent : int
        Reports posted in this run (batches the collector had already counted included).
    count : int or None
        The collector's report count after this run's last post (None: nothing posted).
    batches : int
        Batches posted in this run.
    total : int
        Reports in the journal (one per value).
    delivered : int
        Reports the collector has acknowledged, in this run and earlier ones.
    already : int
        Reports acknowledged before this run (a resumed journal).
    duplicates : int
        Batches of this run that the collector had already counted (acknowledged, not
        added again).
    journal : Path or None
        The journal file (None: kept in memory only).
    reports_of_column : int
        The client's reports of this survey and column, this one included, from its report
        marker (:mod:`ppdp.local.collector._state`); 0: no marker kept (``state=None``).
    again : bool
        This run started a new report of a column the marker had already recorded
        (``again=True``): the local guarantees of the reports compose.
    """

    sent: int
    count: int | None
    batches: int
    total: int = 0
    delivered: int = 0
    already: int = 0
    duplicates: int = 0
    journal: Path | None = None
    reports_of_column: int = 0
    again: bool = False


def split_batches(client: Any, reports: NDArray[Any], batch_size: int) -> list[tuple[int, Any]]:
    """Number the batches after the client's last accepted ``seq``; halve a batch whose body
    would exceed the collector's announced cap (``max_body``, when it has one)."""
    size = min(batch_size, client.max_batch)
    max_body = getattr(client, "max_body", None)
    seq = int(client._seq)
    out: list[tuple[int, Any]] = []
    start = 0
    while start < len(reports):
        chunk = reports[start : start + size]
        if max_body is not None and len(chunk) > 1:
            body = encode_batch(
                survey=client.config.survey, client=client.client_id, seq=seq + 1, reports=chunk
            )
            if len(body) > max_body:
                size = max(1, len(chunk) // 2)
                continue
        seq += 1
        out.append((seq, chunk))
        start += len(chunk)
    return out


def _post(client: Any, seq: int, reports: NDArray[Any]) -> dict[str, Any]:
    """Post journaled batch ``seq`` (the same bytes every time: the same seq and reports)."""
    client._seq = seq - 1  # the journal fixed this batch's number; post() sends _seq + 1
    reply: dict[str, Any] = client.post(reports)
    return reply


def journal_meta(config: Any, values: Any) -> dict[str, str]:
    """What a journal must match to be resumed by this run (``config``: a CollectorConfig)."""
    from ppdp.local.collector._aggregate import Aggregator

    return {
        "survey": config.survey,
        "client": config.require_client().id,
        "spec": json.dumps(Aggregator.from_config(config).spec, sort_keys=True),
        "values_sha256": values_digest(values),
    }


def finished(
    journal: str | os.PathLike[str] | None, meta: Mapping[str, str]
) -> ReportResult | None:
    """The result of a rerun on a journal whose batches were all acknowledged, else None.

    Needs no collector: nothing is left to send. A journal made for other values, another
    survey, randomizer or client raises :class:`ParameterError`.
    """
    if journal is None or not Path(journal).exists():
        return None
    with ReportJournal.open(journal) as jr:
        jr.check_matches(meta)
        if jr.remaining:
            return None
        return ReportResult(0, None, 0, jr.total, jr.total, jr.total, 0, Path(journal))


def interrupted(
    journal: ReportJournal | None, path: Path | None, server: str, why: str, *, total: int = 0
) -> ReportInterruptedError:
    """The one-line error of a run that stopped: how many were delivered, how many remain."""
    delivered = journal.delivered if journal is not None else 0
    total = journal.total if journal is not None else total
    remaining = total - delivered
    if path is not None:
        tail = (
            f"{remaining:,} perturbed reports wait in the journal {path}: rerun the same "
            "command to send exactly those (they are not perturbed again)"
        )
    else:
        tail = (
            f"{remaining:,} perturbed reports were not delivered and no journal was kept "
            "(journal=None): they cannot be resent without perturbing the values again"
        )
    return ReportInterruptedError(
        f"the collector at {server} stopped after {delivered:,} of {total:,} reports were "
        f"delivered ({why}); {tail}",
        delivered=delivered,
        remaining=remaining,
        total=total,
        journal=path,
    )


def deliver(
    client: Any,
    values: Any,
    *,
    journal: str | os.PathLike[str] | None,
    batch_size: int,
    random_state: Any,
    server: str,
    meta: Mapping[str, str] | None = None,
    on_journal: Callable[[bool], None] | None = None,
) -> ReportResult:
    """Perturb ``values`` once into a journal (or resume one), then post what is pending.

    ``on_journal(resumed)`` is called once the journal exists (created, or opened and
    matched) and before the first batch is sent: the report marker records the report there.
    """
    path = None if journal is None else Path(journal)
    meta = dict(meta) if meta is not None else journal_meta(client.config, values)
    resumed = path is not None and path.exists()
    if resumed:
        jr = ReportJournal.open(path)  # type: ignore[arg-type]
        try:
            jr.check_matches(meta)
        except BaseException:
            jr.close()
            raise
        logger.info(
            "resuming journal %s: %d of %d reports already delivered", path, jr.delivered, jr.total
        )
    else:
        reports = client.randomizer.randomise(values, random_state=random_state)
        batches = split_batches(client, np.asarray(reports), batch_size)
        jr = ReportJournal.create(path, meta={**meta, "server": server}, batches=batches)
    with jr:
        if on_journal is not None:
            on_journal(resumed)
        already = jr.delivered
        sent = posted = duplicates = 0
        count = None
        for batch in jr.pending():
            try:
                reply = _post(client, batch.seq, batch.reports)
            except (ProtocolError, DataValidationError) as exc:
                raise interrupted(jr, path, server, str(exc)) from None
            duplicate = bool(reply.get("duplicate"))
            jr.mark_acked(batch.seq, duplicate=duplicate)
            sent += len(batch.reports)
            posted += 1
            duplicates += duplicate
            count = int(reply["count"])
        return ReportResult(sent, count, posted, jr.total, jr.delivered, already, duplicates, path)
