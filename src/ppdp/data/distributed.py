"""Tables beyond one machine's memory: Parquet datasets and Dask DataFrames (``dask`` extra).

Every release that accepts a distributed table goes through four steps here:

1. :func:`open_table` reads a Parquet dataset (a folder, a file or a glob) or takes a Dask
   DataFrame, and checks what the files' footers say before any row is read: a folder
   with no Parquet files, a declared column missing from one file, a column stored with
   different kinds of type in different files.
2. :func:`scan_table` encodes each partition with the schema, *collects* the value
   problems (undeclared categories, missing values, non-numbers) instead of raising them,
   reduces the counts and the caller's partition statistics in a tree, and raises the
   error an in-memory ``encode`` gives on the whole table, with the whole table's count,
   before anything is spent. Errors name a column and a count, never a value.
3. The caller draws the release's noise in the driver (statistics) or with
   :class:`ppdp.random.PartitionStreams` (rows, one stream per partition).
4. :func:`write_parquet_dataset` writes row-level outputs partition by partition into a
   hidden folder, adds ``_SUCCESS`` and renames it into place: nothing is visible on
   failure, and partition ``i`` is ``part-0000i.parquet``, so row order is kept.

:func:`dask_session` runs the work on a ``LocalCluster`` (``"local"``), a scheduler
address (``"tcp://host:8786"``), a ``distributed.Client``, or Dask's local schedulers.

Examples
--------
>>> from ppdp.data.distributed import is_distributed
>>> is_distributed("adult.csv"), is_distributed("adult-parquet/")
(False, True)
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import logging
import operator
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ppdp.data._dask import (
    DEFAULT_STALL_SECONDS,
    DaskRunError,
    compute,
    dask_deadline,
    import_dask,
    is_client,
    local_cluster,
)
from ppdp.data.encoding import (
    EncodeReport,
    ValidationProblems,
    encode,
    encode_collecting,
    log_report,
)
from ppdp.data.names import near_names
from ppdp.exceptions import DataValidationError, OptionalDependencyError, ParameterError

if TYPE_CHECKING:
    from ppdp.data.schema import Schema

__all__ = [
    "DEFAULT_STALL_SECONDS",
    "SUCCESS_MARKER",
    "DaskRunError",
    "DatasetChangedError",
    "DatasetIdentity",
    "FileIdentity",
    "ReleaseStage",
    "TableScan",
    "check_unchanged",
    "clean_staging",
    "compute",
    "dask_deadline",
    "dask_session",
    "dataset_identity",
    "encoded_partitions",
    "file_identity",
    "guarded_release",
    "hidden_name",
    "is_distributed",
    "open_table",
    "parquet_files",
    "partition_sizes",
    "read_parquet_dataset",
    "scan_table",
    "write_parquet_dataset",
]

#: The file that marks a complete partitioned output (written last, before the rename).
SUCCESS_MARKER = "_SUCCESS"
_INSTALL_HINT = "pip install 'ppdp[dask]'"
_LOCAL_SCHEDULERS = ("threads", "threading", "sync", "synchronous", "single-threaded", "processes")
_GLOB_CHARS = re.compile(r"[*?\[]")
#: A LocalCluster without a dashboard. The scheduler serves its HTTP routes even then, on
#: port 8787 unless told otherwise (a warning, an error under pytest, when two clusters
#: run at once): ":0" takes a free port, and dashboard=False keeps the dashboard off.
_QUIET_CLUSTER: dict[str, Any] = {
    "dashboard_address": ":0",
    "scheduler_kwargs": {"dashboard": False},
    "silence_logs": logging.CRITICAL,  # the workers' own logs: ppdp says what failed
}
logger = logging.getLogger(__name__)


# ------------------------------------------------------------------ what is distributed


def _is_dask_frame(data: Any) -> bool:
    mod = type(data).__module__
    if not (mod.startswith("dask") or mod.startswith("dask_expr")):
        return False
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover - a dask object without dask is impossible
        return False
    return isinstance(data, dd.DataFrame)


def is_distributed(data: Any) -> bool:
    """True for a Dask DataFrame or a path naming a Parquet dataset.

    A path is a Parquet dataset when it is a folder, ends in ``.parquet`` or ``.pq``, or
    holds a glob pattern (``data/*.parquet``); a CSV file is not. Only the name is
    looked at: a folder that does not exist is refused later by :func:`open_table`.
    """
    if _is_dask_frame(data):
        return True
    if not isinstance(data, str | os.PathLike):
        return False
    text = os.fspath(data)
    if isinstance(text, bytes):
        return False
    low = text.lower()
    if low.endswith((".parquet", ".pq")) or _GLOB_CHARS.search(text):
        return True
    if low.endswith((".csv", ".csv.gz", ".tsv", ".txt", ".json", ".gz")):
        return False
    return text.endswith(("/", os.sep)) or os.path.isdir(text)


# ------------------------------------------------------------------ schedulers


@contextlib.contextmanager
def dask_session(
    scheduler: Any = None,
    *,
    default_local_cluster: bool = True,
    cluster_kwargs: dict[str, Any] | None = None,
) -> Iterator[Any]:
    """Yield what to pass as ``scheduler=`` to ``dask.compute``, and clean up after.

    Parameters
    ----------
    scheduler : None, "local", str address, distributed.Client, or a Dask local name
        ``"local"`` starts (and afterwards stops) a ``LocalCluster``; ``"tcp://host:port"``
        connects a ``Client`` (closed afterwards); a ``Client`` is used and left open;
        ``"threads"``, ``"processes"``, ``"sync"`` pass through. ``None`` means a
        ``LocalCluster`` when ``default_local_cluster``, else Dask's default (an active
        ``Client`` if there is one).
    default_local_cluster : bool, default True
    cluster_kwargs : dict, optional
        Passed to ``LocalCluster`` (e.g. ``n_workers=2, threads_per_worker=1``).

    Raises
    ------
    ParameterError
        A scheduler of another kind, or an address that cannot be reached (one line).
    OptionalDependencyError
        The ``dask`` extra is not installed.
    """
    import_dask()
    if scheduler is None and not default_local_cluster:
        yield None
        return
    if isinstance(scheduler, str) and scheduler in _LOCAL_SCHEDULERS:
        yield scheduler
        return
    if is_client(scheduler):
        yield scheduler
        return
    is_address = isinstance(scheduler, str) and "://" in scheduler
    if not (scheduler is None or scheduler == "local" or is_address):
        raise ParameterError(
            f"scheduler ({scheduler!r}) must be 'local', an address such as "
            f"'tcp://host:8786', a distributed.Client, or one of "
            f"{', '.join(repr(s) for s in _LOCAL_SCHEDULERS)}"
        )
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - distributed ships with the extra
        raise OptionalDependencyError(
            f"a distributed scheduler needs the dask extra: {_INSTALL_HINT}"
        ) from exc
    if is_address:
        _refuse_closed_port(scheduler)
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ParameterError(
                f"scheduler ({scheduler!r}) cannot be reached ({type(exc).__name__}); start "
                "one with `dask scheduler`, or use 'local' for a cluster on this machine"
            ) from None
        with client:
            yield client
        return
    kwargs = {**_QUIET_CLUSTER, **(cluster_kwargs or {})}
    with local_cluster(kwargs) as client:
        yield client


def _refuse_closed_port(address: str) -> None:
    """Refuse a ``tcp://host:port`` where nothing listens at once (a Client retries for 10 s).

    Only a refused connection is decided here; a slow or filtered host is left to the
    Client's own timeout. Other protocols (``tls://``, ``ucx://``) go to the Client as given.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address)
    if parts.scheme != "tcp" or parts.hostname is None:
        return
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        raise ParameterError(f"scheduler ({address!r}) must name a port, as in tcp://host:8786")
    try:
        with socket.create_connection((parts.hostname, port), timeout=3.0):
            return
    except ConnectionRefusedError:
        raise ParameterError(
            f"scheduler ({address!r}) cannot be reached (connection refused); start one with "
            "`dask scheduler`, or use 'local' for a cluster on this machine"
        ) from None
    except OSError:  # a timeout or an unknown host: the Client says it in its own words
        return


def _compute(*graphs: Any, scheduler: Any) -> tuple[Any, ...]:
    return compute(*graphs, scheduler=scheduler)


# ------------------------------------------------------------------ opening a dataset


def _natural_key(path: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def _is_data_file(path: Path) -> bool:
    name = path.name
    return (
        path.is_file()
        and not name.startswith((".", "_"))
        and name.lower().endswith((".parquet", ".pq"))
    )


def parquet_files(path: str | os.PathLike[str], *, param: str = "data") -> list[str]:
    """The data files of a Parquet dataset, in natural order (``part-2`` before ``part-10``).

    Hidden files and files starting with ``_`` (``_SUCCESS``, ``_metadata``) are skipped.

    Raises
    ------
    DataValidationError
        Nothing at ``path``, or no Parquet file there.
    """
    text = os.fspath(path)
    if _GLOB_CHARS.search(text):
        found = [Path(p) for p in glob.glob(text, recursive=True)]
        files = [p for p in found if _is_data_file(p)]
        if not files:
            raise DataValidationError(
                f"{param} ({text!r}): the pattern matches no Parquet file (.parquet or .pq)"
            )
    else:
        root = Path(text)
        if root.is_file():
            files = [root]
        elif root.is_dir():
            files = [p for p in root.rglob("*") if _is_data_file(p)]
            files = [
                p
                for p in files
                if not any(part.startswith((".", "_")) for part in p.relative_to(root).parts[:-1])
            ]
            if not files:
                raise DataValidationError(
                    f"{param} ({text!r}): the folder holds no Parquet file (.parquet or .pq)"
                )
        else:
            raise DataValidationError(f"{param} ({text!r}) does not exist")
    return sorted((str(p) for p in files), key=_natural_key)


# ------------------------------------------------------------------ the files' identities


class DatasetChangedError(DataValidationError):
    """A file of a Parquet dataset changed, appeared or vanished after it was opened.

    Raised by every read of a partition (the validating scan's and the release's) and by
    :func:`check_unchanged`; :func:`guarded_release` adds whether ε was charged.
    """


@dataclass(frozen=True)
class FileIdentity:
    """What says a Parquet file is the one that was scanned.

    Attributes
    ----------
    path : str
    size : int
        Bytes.
    mtime_ns : int
        Modification time.
    inode : tuple of int
        ``(st_dev, st_ino)``: a file renamed over this one is another file.
    footer : str
        SHA-256 of the Parquet footer (the schema, the row groups with their row counts,
        offsets and statistics): a rewrite that keeps size and time still changes it.
    """

    path: str
    size: int
    mtime_ns: int
    inode: tuple[int, int]
    footer: str


@dataclass(frozen=True)
class DatasetIdentity:
    """The files of a dataset when it was opened: ``source`` as given, and each file."""

    source: str
    files: tuple[FileIdentity, ...]


def _stat_identity(path: str, footer: str) -> FileIdentity:
    st = os.stat(path)
    return FileIdentity(path, st.st_size, st.st_mtime_ns, (st.st_dev, st.st_ino), footer)


def _footer_digest(path: str) -> str:
    """SHA-256 of the file's footer; ``""`` when it has none (refused by the footer check)."""
    import hashlib

    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size < 12:
            return ""
        fh.seek(size - 8)
        tail = fh.read(8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != b"PAR1" or length > size - 12:
            return ""
        fh.seek(size - 8 - length)
        return hashlib.sha256(fh.read(length)).hexdigest()


def file_identity(path: str) -> FileIdentity:
    """The identity of one Parquet file now (a stat and its footer).

    Raises
    ------
    FileNotFoundError
        The file is gone.
    """
    return _stat_identity(path, _footer_digest(path))


def _difference(old: FileIdentity, new: FileIdentity | None) -> str | None:
    """How ``new`` differs from ``old`` in words; None when it does not."""
    if new is None:
        return "vanished"
    if new.inode != old.inode:
        return "was replaced by another file"
    if new.size != old.size:
        return f"changed size ({old.size:,} -> {new.size:,} bytes)"
    if new.footer != old.footer:
        return "was rewritten (its Parquet footer differs)"
    if new.mtime_ns != old.mtime_ns:
        return "was modified (its modification time differs)"
    return None


def _changed(path: str, what: str) -> DatasetChangedError:
    return DatasetChangedError(
        f"data: the file {path!r} {what} after the dataset was opened for the validating scan"
    )


def _verify(expected: FileIdentity, *, footer: bool = True) -> None:
    """Refuse a file that is not the one opened (a stat, and its footer when ``footer``)."""
    try:
        now = (
            file_identity(expected.path)
            if footer
            else _stat_identity(expected.path, expected.footer)
        )
    except FileNotFoundError:
        now = None
    what = _difference(expected, now)
    if what is not None:
        raise _changed(expected.path, what)


#: The identity of each frame :func:`open_table` made from files, by ``id`` (with a weak
#: reference, so a reused id is never taken for the frame).
_IDENTITIES: dict[int, tuple[Any, DatasetIdentity]] = {}


def _remember(frame: Any, identity: DatasetIdentity) -> None:
    import weakref

    key = id(frame)
    _IDENTITIES[key] = (weakref.ref(frame), identity)
    weakref.finalize(frame, _IDENTITIES.pop, key, None)


def dataset_identity(frame: Any) -> DatasetIdentity | None:
    """The files ``frame`` reads, as they were when :func:`open_table` opened them.

    None for a frame that :func:`open_table` did not make from local files (a Dask
    DataFrame given by the caller, remote storage): its source is the caller's to keep.
    """
    entry = _IDENTITIES.get(id(frame))
    if entry is None or entry[0]() is not frame:
        return None
    return entry[1]


def check_unchanged(frame: Any, *, param: str = "data") -> None:
    """Refuse, before the spend, a dataset whose files differ from those :func:`open_table` saw.

    The same files (none added, none removed), each with the same size, modification
    time, inode and Parquet footer. Each partition's read checks its own file again, so a
    change after this check stops the release (:func:`guarded_release`).

    Raises
    ------
    DatasetChangedError
        One line naming the first file that differs; nothing was charged.
    """
    identity = dataset_identity(frame)
    if identity is None:
        return
    try:
        now = parquet_files(identity.source, param=param)
    except DataValidationError:
        now = []
    opened = [f.path for f in identity.files]
    added = sorted(set(now) - set(opened), key=_natural_key)
    if added:
        raise DatasetChangedError(
            f"{param}: the file {added[0]!r} appeared in the dataset after it was opened for "
            f"the validating scan ({len(added)} new file(s))"
        )
    for f in identity.files:
        _verify(f)


class ReleaseStage:
    """Where a guarded release stands: before the spend, or charged (and how much)."""

    def __init__(self) -> None:
        self.charged: str | None = None

    def spent(self, records: Sequence[Any]) -> None:
        """Record that the spend happened, with its ledger ``records`` (empty: no ledger)."""
        if not records:
            self.charged = "ε was charged, recorded nowhere (no accountant)"
            return
        total = functools.reduce(operator.add, (r.budget for r in records))
        entries = ", ".join(str(r.index) for r in records)
        self.charged = f"ε was charged ({total}, ledger entries {entries})"

    def tail(self) -> str:
        if self.charged is None:
            return "; nothing was charged: run again once nothing writes to the dataset"
        return (
            f"; {self.charged} and nothing was released: the charge stands; run again once "
            "nothing writes to the dataset (a new release, a new charge)"
        )


@contextlib.contextmanager
def guarded_release() -> Iterator[ReleaseStage]:
    """Say whether ε was charged when a dataset changes (or its cluster fails) under a release.

    Call ``stage.spent(records)`` right after the spend. A :class:`DatasetChangedError`
    raised inside (by :func:`check_unchanged`, or by a partition's read) leaves as one line
    ending "nothing was charged" before that call and "ε was charged ... and nothing was
    released" after it.
    """
    stage = ReleaseStage()
    try:
        yield stage
    except DatasetChangedError as exc:
        raise DatasetChangedError(f"{exc}{stage.tail()}") from None
    except DaskRunError as exc:
        if stage.charged is None:
            raise DaskRunError(f"{exc}; nothing was charged") from None
        raise DaskRunError(
            f"{exc}; {stage.charged} and nothing was released: the charge stands"
        ) from None


def _type_family(arrow_type: Any) -> str:
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "numeric"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_null(t):
        return "null"
    return str(t)


def _check_files(files: Sequence[str], needed: Sequence[str], *, param: str) -> None:
    """Every file holds every needed column, each column with one kind of type."""
    import pyarrow.parquet as pq

    seen: dict[str, tuple[str, str]] = {}
    for f in files:
        try:
            arrow_schema = pq.read_schema(f)
        except Exception as exc:  # pyarrow raises several types for a damaged footer
            raise DataValidationError(
                f"{param}: {Path(f).name!r} is not a readable Parquet file ({type(exc).__name__})"
            ) from None
        names = set(arrow_schema.names)
        missing = [c for c in needed if c not in names]
        if missing:
            raise DataValidationError(
                f"{param}: the file {Path(f).name!r} lacks column(s) "
                f"{', '.join(repr(m) for m in missing)} declared in the schema; every file of "
                f"the dataset must hold every declared column{near_names(missing, names)}"
            )
        for c in needed:
            family = _type_family(arrow_schema.field(c).type)
            if family == "null":  # an all-missing column in one file fits any type
                continue
            first = seen.setdefault(c, (family, f))
            if first[0] != family:
                raise DataValidationError(
                    f"{param}: column {c!r} is stored as {first[0]} in {Path(first[1]).name!r} "
                    f"but as {family} in {Path(f).name!r}; every file must store it with one "
                    "kind of type"
                )


def open_table(data: Any, schema: Schema, *, param: str = "data") -> Any:
    """A Dask DataFrame of the schema's columns (the label's too, when declared).

    Parameters
    ----------
    data : dask DataFrame, or path to a Parquet dataset (folder, file or glob)
    schema : Schema
    param : str
        The parameter's name in error messages (``"data"``, ``"IN"``).

    Raises
    ------
    DataValidationError
        No Parquet files, a declared column missing (in one file, or from the frame), a
        column stored with different kinds of type in different files.
    """
    import_dask()
    import dask.dataframe as dd

    # The privacy unit's id column too, when declared, and the open columns (their keys
    # are read as texts by a private selection, never encoded).
    needed = list(dict.fromkeys([*schema.data_columns, *schema.open_column_names]))
    if _is_dask_frame(data):
        missing = [c for c in needed if c not in data.columns]
        if missing:
            raise DataValidationError(
                f"{param}: missing column(s) {', '.join(repr(m) for m in missing)} declared in "
                f"the schema{near_names(missing, [str(c) for c in data.columns])}"
            )
        return data[needed]
    if not isinstance(data, str | os.PathLike):
        raise ParameterError(
            f"{param} ({type(data).__name__}) must be a Dask DataFrame or a Parquet dataset path"
        )
    text = os.fspath(data)
    if "://" in text:  # remote storage: the readers check the footers themselves
        frame = dd.read_parquet(text)
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise DataValidationError(
                f"{param}: the Parquet dataset lacks column(s) "
                f"{', '.join(repr(m) for m in missing)} declared in the schema"
                f"{near_names(missing, [str(c) for c in frame.columns])}"
            )
        return frame[needed]
    files = parquet_files(text, param=param)
    # Each file's identity first: every read (the scan's, the release's) is checked against it.
    identity = DatasetIdentity(text, tuple(_opened(f) for f in files))
    _check_files(files, needed, param=param)
    frame = _frame_of_files(files, needed, identity.files)
    _remember(frame, identity)
    return frame


def _opened(path: str) -> FileIdentity:
    try:
        return file_identity(path)
    except FileNotFoundError:
        raise _changed(path, "vanished") from None


#: Row groups are gathered into partitions of about this many uncompressed bytes.
PARTITION_BYTES = 64 << 20


def _read_piece(
    path: str,
    row_groups: tuple[int, ...],
    columns: tuple[str, ...],
    expected: FileIdentity | None = None,
) -> pd.DataFrame:
    """Row groups of one file, checked to be the file that was opened (before and after)."""
    import pyarrow.parquet as pq

    if expected is not None:
        _verify(expected)
    try:
        table = pq.ParquetFile(path).read_row_groups(list(row_groups), columns=list(columns))
    except OSError:  # the file went away (or was cut short) while it was read
        if expected is None:
            raise
        _verify(expected)
        raise
    if expected is not None:
        _verify(expected, footer=False)  # a rename over it while it was read
    return table.to_pandas(ignore_metadata=True)


def _frame_of_files(
    files: Sequence[str],
    needed: Sequence[str],
    identities: Sequence[FileIdentity | None] | None = None,
) -> Any:
    """One partition per run of row groups of about :data:`PARTITION_BYTES`, in file order.

    Read with pyarrow directly: the partitions are exactly the files' rows in order, with
    a fresh RangeIndex, whatever index metadata the writer stored. With ``identities``
    (one per file), every read refuses a file that is no longer the one opened.
    """
    import dask.dataframe as dd
    import pyarrow.parquet as pq
    from dask import delayed

    columns = tuple(needed)
    pieces: list[Any] = []
    expect = list(identities) if identities is not None else [None] * len(files)
    for f, known in zip(files, expect, strict=True):
        if known is not None:
            _verify(known)  # the row-group layout below must be that of the opened file
        meta = pq.ParquetFile(f).metadata
        group: list[int] = []
        size = 0
        for g in range(meta.num_row_groups):
            group.append(g)
            size += meta.row_group(g).total_byte_size
            if size >= PARTITION_BYTES:
                pieces.append(delayed(_read_piece, pure=True)(f, tuple(group), columns, known))
                group, size = [], 0
        if group or meta.num_row_groups == 0:
            pieces.append(delayed(_read_piece, pure=True)(f, tuple(group), columns, known))
    empty = pq.read_schema(files[0]).empty_table().select(list(columns))
    meta_frame = empty.to_pandas(ignore_metadata=True)
    return dd.from_delayed(pieces, meta=meta_frame, verify_meta=False)


# ------------------------------------------------------------------ one scan


@dataclass(frozen=True)
class TableScan:
    """What one pass over a distributed table found.

    Attributes
    ----------
    n_rows : int
        Rows in the table (public under the replace-one relation).
    report : EncodeReport
        The encoding counts over every partition (custodian only, never released).
    value : Any
        The merged partition statistics of the caller's ``partition_fn`` (None without).
    n_partitions : int
    partition_reports : tuple of EncodeReport
        Each partition's counts, in order: a later pass over the partitions
        (:func:`encoded_partitions`) must read exactly these.
    include_label : bool
        Whether the label was encoded (the reports count it then).
    """

    n_rows: int
    report: EncodeReport
    value: Any
    n_partitions: int
    partition_reports: tuple[EncodeReport, ...] = ()
    include_label: bool = False


@dataclass(frozen=True)
class _Part:
    report: EncodeReport
    problems: ValidationProblems
    value: Any


def _merge_values(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _merge_parts(*parts: _Part) -> _Part:
    out = parts[0]
    for p in parts[1:]:
        out = _Part(
            out.report + p.report,
            out.problems + p.problems,
            _merge_values(out.value, p.value),
        )
    return out


def _scan_partition(
    part: pd.DataFrame,
    schema: Schema,
    include_label: bool,
    partition_fn: Callable[..., Any] | None,
    partition_rows: bool = False,
) -> _Part:
    X, y, report, problems = encode_collecting(schema, part, include_label=include_label, order="F")
    if partition_fn is None:
        value = None
    else:
        value = partition_fn(X, y, part) if partition_rows else partition_fn(X, y)
    return _Part(report, problems, value)


def _tree(parts: list[Any], merge: Callable[..., Any], split_every: int) -> Any:
    from dask import delayed

    while len(parts) > 1:
        parts = [
            delayed(merge, pure=True)(*parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    return parts[0]


def scan_table(
    frame: Any,
    schema: Schema,
    *,
    include_label: bool,
    on_invalid: str = "raise",
    partition_fn: Callable[..., Any] | None = None,
    scheduler: Any = None,
    split_every: int = 8,
    partition_rows: bool = False,
) -> TableScan:
    """Validate every partition and reduce the caller's statistics, in one pass.

    Parameters
    ----------
    frame : dask DataFrame
        From :func:`open_table`.
    schema : Schema
    include_label : bool
        Encode the label's one-hot block into ``X`` (as ``schema.encode``).
    on_invalid : {"raise", "mask"}
        ``"raise"``: a value-dependent problem anywhere raises, after the pass, the error
        an in-memory ``encode`` gives on the whole table, with the whole table's count.
        ``"mask"``: nothing value-dependent raises (the accountant's total mode).
    partition_fn : callable ``(X, y) -> value``, optional
        Statistics of one encoded partition (``X`` Fortran-ordered float64 in ``[0, 1]``,
        ``y`` class codes or None). Values are merged with ``+``.
    partition_rows : bool, default False
        Call ``partition_fn(X, y, rows)``, ``rows`` the partition's DataFrame as read (for
        columns that are not encoded, such as open ``by`` columns).
    scheduler : optional
        From :func:`dask_session`.
    split_every : int, default 8
        Fan-in of the reduction tree.

    Returns
    -------
    TableScan

    Raises
    ------
    DataValidationError
        As :func:`ppdp.data.encode` would on the whole table.
    """
    from dask import delayed

    if on_invalid not in ("raise", "mask"):
        raise ParameterError(f"on_invalid ({on_invalid!r}) must be 'raise' or 'mask'")
    if not isinstance(split_every, int) or split_every < 2:
        raise ParameterError(f"split_every ({split_every!r}) must be an integer >= 2")
    parts = [
        delayed(_scan_partition, pure=True)(p, schema, include_label, partition_fn, partition_rows)
        for p in frame.to_delayed()
    ]
    reports = [delayed(_report_of, pure=True)(p) for p in parts]
    if parts:
        merged, *each = _compute(
            _tree(parts, _merge_parts, split_every), *reports, scheduler=scheduler
        )
    else:  # pragma: no cover - dask frames have at least one partition
        merged, each = _Part(EncodeReport(n_rows=0), ValidationProblems(), None), []
    if on_invalid == "raise":
        merged.problems.raise_first()
    log_report(merged.report)
    return TableScan(
        n_rows=merged.report.n_rows,
        report=merged.report,
        value=merged.value,
        n_partitions=len(parts),
        partition_reports=tuple(each),
        include_label=include_label,
    )


def _report_of(part: _Part) -> EncodeReport:
    return part.report


def _encode_part(
    part: pd.DataFrame,
    schema: Schema,
    include_label: bool,
    on_invalid: str,
    expected: EncodeReport | None = None,
    index: int = 0,
) -> tuple[Any, Any]:
    X, y, report = encode(
        schema, part, include_label=include_label, log=False, on_invalid=on_invalid
    )
    if expected is not None and report != expected:
        raise DatasetChangedError(
            f"data: partition {index} read {report.n_rows:,} row(s) with other encoding "
            f"counts than the validating scan found there ({expected.n_rows:,} row(s)): the "
            "dataset changed after the scan"
        )
    return X, y


def encoded_partitions(
    frame: Any,
    schema: Schema,
    *,
    include_label: bool,
    on_invalid: str = "mask",
    scan: TableScan | None = None,
) -> list[Any]:
    """One ``dask.delayed`` ``(X, y)`` per partition, in partition order.

    Use after a successful :func:`scan_table`: the default ``on_invalid="mask"`` cannot
    raise on values (the scan already refused what ``"raise"`` refuses). With the ``scan``
    (encoded with the same ``include_label``), each partition's encoding counts (rows,
    clipped, mapped, imputed, masked values) must be the scan's for that partition, so a
    value that was not validated (a file rewritten in place) is refused, never released.
    """
    from dask import delayed

    parts = frame.to_delayed()
    expect: list[EncodeReport | None] = [None] * len(parts)
    if (
        scan is not None
        and scan.include_label == include_label
        and len(scan.partition_reports) == len(parts)
    ):
        expect = list(scan.partition_reports)
    return [
        delayed(_encode_part, pure=True)(p, schema, include_label, on_invalid, known, i)
        for i, (p, known) in enumerate(zip(parts, expect, strict=True))
    ]


# ------------------------------------------------------------------ writing


def hidden_name(target: Path, kind: str) -> Path:
    """A fresh hidden path beside ``target``: ``.NAME.<kind>.<host>.<pid>-<random>``.

    ``kind`` is ``staging`` (a release being written), ``tmp`` (a folder being written) or
    ``old`` (a replaced folder, until the new one is in place). The host and process say
    whose it is, so :func:`clean_staging` can remove it once that process is gone.
    """
    from ppdp._io import host_tag

    name = f".{target.name}.{kind}.{host_tag()}.{os.getpid()}-{secrets.token_hex(4)}"
    return target.parent / name


def _leftover_pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"^\.\.?{re.escape(name)}\.(?P<kind>staging|tmp|old)"
        rf"(?:\.(?P<host>[A-Za-z0-9]+)\.(?P<pid>[0-9]+)-[0-9a-f]+|-[0-9a-f-]+)"
    )


def clean_staging(target: str | os.PathLike[str]) -> tuple[list[Path], list[Path]]:
    """Remove the hidden folders a killed run left beside ``target``; name the others.

    A staging, temporary or replaced folder (:func:`hidden_name`) written on this machine
    by a process that no longer exists is removed; so is the replaced copy of a dead run
    once ``target`` is in place (otherwise it may be the only copy of the earlier release,
    and is named). Folders of a live process, of another machine, or named the way earlier
    versions named them are left alone and named in a warning (custodian's log).

    Returns
    -------
    (removed, kept) : lists of paths
    """
    from ppdp._io import writer_gone

    out = Path(os.fspath(target))
    if not out.parent.is_dir():
        return [], []
    pattern = _leftover_pattern(out.name)
    removed: list[Path] = []
    kept: list[Path] = []
    for entry in sorted(out.parent.iterdir()):
        m = pattern.match(entry.name)
        if m is None or entry.is_symlink() or not entry.is_dir():
            continue
        dead = writer_gone(m["host"], None if m["pid"] is None else int(m["pid"]))
        if not dead or (m["kind"] == "old" and not out.is_dir()):
            kept.append(entry)
            continue
        shutil.rmtree(entry, ignore_errors=True)
        (removed if not entry.exists() else kept).append(entry)
    for path in removed:
        logger.info("removed %s, a folder left by an interrupted run", path)
    for path in kept:
        logger.warning(
            "%s is a hidden folder of another or an interrupted run; remove it if no ppdp is "
            "writing %s",
            path,
            out,
        )
    return removed, kept


def _write_part(df: pd.DataFrame, path: str) -> int:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"a partition to write must be a pandas DataFrame; got {type(df).__name__}")
    df.to_parquet(path, index=False)
    return len(df)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - some filesystems refuse to open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def write_parquet_dataset(
    parts: Any,
    path: str | os.PathLike[str],
    *,
    scheduler: Any = None,
    overwrite: bool = False,
    param: str = "output",
) -> Path:
    """Write partitions as ``part-00000.parquet``, ... atomically; return the folder.

    The parts are written (on the workers) into a hidden folder beside ``path``; then
    ``_SUCCESS`` (with the number of parts and rows) is written and the folder is renamed
    to ``path``. If anything fails, the hidden folder is removed and ``path`` is untouched.
    On a multi-machine cluster ``path`` must be on storage every worker can write.

    Parameters
    ----------
    parts : list of dask.delayed pandas DataFrame, or a dask DataFrame
        In row order; partition ``i`` becomes ``part-{i:05d}.parquet``.
    path : path
        The folder to create. Its parent must exist.
    scheduler : optional
        From :func:`dask_session`.
    overwrite : bool, default False
        Replace an existing folder (swapped in only after the new one is complete).

    Raises
    ------
    ParameterError
        ``path`` exists (without ``overwrite``) or its parent folder does not.
    """
    target = Path(os.fspath(path))
    if target.exists() and not overwrite:
        raise ParameterError(f"{param} ({str(target)!r}) already exists; choose a new folder")
    if target.exists() and not target.is_dir():
        raise ParameterError(
            f"{param} ({str(target)!r}) is a file; a partitioned output is a folder"
        )
    parent = target.parent
    if not parent.is_dir():
        raise ParameterError(
            f"{param} ({str(target)!r}): the folder {str(parent)!r} does not exist"
        )
    if _is_dask_frame(parts):
        parts = list(parts.to_delayed())
    from dask import delayed

    clean_staging(target)
    tmp = hidden_name(target, "tmp")
    tmp.mkdir()
    try:
        tasks = [
            delayed(_write_part, pure=False)(part, str(tmp / f"part-{i:05d}.parquet"))
            for i, part in enumerate(parts)
        ]
        rows = _compute(*tasks, scheduler=scheduler) if tasks else ()
        marker = {"parts": len(tasks), "rows": int(sum(rows))}
        (tmp / SUCCESS_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
        _fsync_dir(tmp)
        if target.exists():
            trash = hidden_name(target, "old")
            os.replace(target, trash)
            os.replace(tmp, target)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, target)
        _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("wrote %d part(s), %d row(s) to %s", marker["parts"], marker["rows"], target)
    return target


def read_parquet_dataset(path: str | os.PathLike[str]) -> Any:
    """A lazy Dask DataFrame of a folder written by :func:`write_parquet_dataset`.

    Raises
    ------
    DataValidationError
        The folder has no ``_SUCCESS`` marker (an incomplete or foreign folder).
    """
    import_dask()
    import dask.dataframe as dd

    folder = Path(os.fspath(path))
    if not (folder / SUCCESS_MARKER).is_file():
        raise DataValidationError(
            f"{str(folder)!r} has no {SUCCESS_MARKER} marker: it is not a complete ppdp output"
        )
    files = sorted((str(p) for p in folder.glob("part-*.parquet")), key=_natural_key)
    if not files:
        return dd.from_pandas(pd.DataFrame(), npartitions=1)
    import pyarrow.parquet as pq

    return _frame_of_files(files, pq.read_schema(files[0]).names)


def partition_sizes(frame: Any, *, scheduler: Any = None) -> np.ndarray:
    """Rows per partition of a Dask DataFrame (one cheap pass)."""
    sizes = frame.map_partitions(len).to_delayed()
    return np.asarray(_compute(*sizes, scheduler=scheduler), dtype=np.int64)
