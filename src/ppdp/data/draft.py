"""Propose a schema from data, loudly.

A drafted schema reads bounds and categories from the data it is given. If that data is the
private data, the draft *leaks*: the minimum and maximum of a column are the values of two
individuals, and a rare category reveals that someone holds it. Use a draft only as a
starting point, and replace every bound and domain by public knowledge (a questionnaire's
answer range, a code list, a regulation) before any release. :func:`draft_schema` always
issues a :class:`~ppdp.exceptions.PrivacyLeakWarning` saying so.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp._validation import check_int
from ppdp.data.schema import (
    CategoricalColumn,
    Category,
    LabelSpec,
    NumericColumn,
    Schema,
)
from ppdp.exceptions import (
    DataValidationError,
    OptionalDependencyError,
    PPDPWarning,
    PrivacyLeakWarning,
)

__all__ = ["LEAK_MESSAGE", "draft_schema", "draft_schema_from_file", "read_table"]

#: The warning every draft issues (one line).
LEAK_MESSAGE = (
    "schema drafted from the data: its bounds and categories leak the data they were read "
    "from unless they are public knowledge; replace them by public bounds and full domains "
    "before any release"
)

_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".tsv", ".tsv.gz")
_PARQUET_SUFFIXES = (".parquet", ".pq")


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for s in (*_CSV_SUFFIXES, *_PARQUET_SUFFIXES):
        if name.endswith(s):
            return s
    return path.suffix.lower()


def _csv_header(p: Path, sep: str) -> list[str] | None:
    """The header line of a CSV file, read alone (None if it cannot be read that way)."""
    import bz2
    import csv
    import gzip
    import lzma

    name = p.name.lower()
    if name.endswith(".zip"):
        return None  # pandas reads the archive's single member; let it
    opener = (
        gzip.open
        if name.endswith(".gz")
        else bz2.open
        if name.endswith(".bz2")
        else lzma.open
        if name.endswith(".xz")
        else open
    )
    try:
        with opener(p, "rt", encoding="utf-8-sig", newline="") as fh:
            return next(csv.reader(fh, delimiter=sep))
    except (OSError, EOFError, UnicodeDecodeError, StopIteration, csv.Error, ValueError):
        return None


def _parquet_columns(p: Path) -> list[str] | None:
    try:
        import pyarrow.dataset as pads

        return list(pads.dataset(str(p), format="parquet").schema.names)
    except Exception:  # unreadable here: pandas reads (and reports) it below
        return None


def _check_header(p: Path, header: list[str], columns: Sequence[str]) -> list[str]:
    """The wanted columns in file order; missing or repeated ones raise before the body is read."""
    wanted = set(columns)
    missing = [c for c in columns if c not in set(header)]
    if missing:
        names = ", ".join(repr(m) for m in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise DataValidationError(
            f"data ({str(p)!r}): missing column(s) {names}{more} declared in the schema "
            "(read from the header; no row was read)"
        )
    found = [h for h in header if h in wanted]
    if len(found) != len(wanted):
        dup = next(h for h in found if found.count(h) > 1)
        raise DataValidationError(f"data ({str(p)!r}): column {dup!r} appears more than once")
    return found


def read_table(
    path: str | os.PathLike[str], *, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Read a CSV (optionally compressed) or Parquet file into a DataFrame.

    Parameters
    ----------
    path : path
        The file (a Parquet dataset may be a folder).
    columns : sequence of str, optional
        Read only these columns. The header is read first, alone: a missing (or repeated)
        column is reported before any row is read, and the other columns of a wide file
        are never materialised.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    DataValidationError
        The suffix is not a supported format, a wanted column is missing, or the file cannot
        be parsed (one line).
    OptionalDependencyError
        Parquet without ``pyarrow`` installed.
    """
    p = Path(path)
    suffix = _suffix(p)
    if suffix not in _CSV_SUFFIXES + _PARQUET_SUFFIXES:
        raise DataValidationError(
            f"data ({str(p)!r}) must be a .csv (optionally compressed), .tsv or .parquet file"
        )
    if p.is_dir() and suffix not in _PARQUET_SUFFIXES:
        raise DataValidationError(f"data ({str(p)!r}) is a folder, not a file")
    if not p.exists():
        raise FileNotFoundError(f"data ({str(p)!r}) does not exist")
    try:
        if suffix in _PARQUET_SUFFIXES:
            try:
                import pyarrow  # noqa: F401
            except ImportError as exc:
                raise OptionalDependencyError(
                    "reading Parquet needs pyarrow: pip install 'ppdp[dask]'"
                ) from exc
            if columns is None:
                return pd.read_parquet(p)
            names = _parquet_columns(p)
            use = list(columns) if names is None else _check_header(p, names, columns)
            return pd.read_parquet(p, columns=use)
        sep = "\t" if suffix.startswith(".tsv") else ","
        if columns is None:
            return pd.read_csv(p, sep=sep)
        header = _csv_header(p, sep)
        if header is None:  # let pandas read (and report) it whole
            return pd.read_csv(p, sep=sep)
        use = _check_header(p, header, columns)
        return pd.read_csv(p, sep=sep, usecols=use)[use]
    except (OptionalDependencyError, FileNotFoundError, DataValidationError):
        raise
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else type(exc).__name__
        kind = "Parquet" if suffix in _PARQUET_SUFFIXES else "CSV"
        raise DataValidationError(
            f"data ({str(p)!r}) could not be read as {kind}: {first}"
        ) from exc


def _sorted_values(values: Sequence[object]) -> list[Category]:
    out: list[Category] = []
    for v in values:
        if isinstance(v, np.bool_ | bool):
            out.append(bool(v))
        elif isinstance(v, np.integer | int) or (
            isinstance(v, float | np.floating) and float(v).is_integer()
        ):
            out.append(int(v))
        else:
            out.append(str(v))
    return sorted(set(out), key=lambda c: (1, c) if isinstance(c, str) else (0, c))


def draft_schema(
    df: pd.DataFrame,
    *,
    label: str | None = None,
    max_categories: int = 50,
    missing_values: Sequence[Category] = (),
) -> Schema:
    """Propose a schema from ``df``. ALWAYS warns :class:`~ppdp.exceptions.PrivacyLeakWarning`.

    Numeric columns get their observed minimum and maximum as bounds (integer columns are
    marked ``integer``; a constant column gets ``upper = lower + 1``); boolean columns become
    integer columns on ``[0, 1]``; other columns become categorical with their observed values,
    sorted. The label's classes are its observed values.

    Parameters
    ----------
    df : DataFrame
        The data. If it is private, the draft leaks it (see the module docstring).
    label : str, optional
        Column to declare as the label.
    max_categories : int, default 50
        Non-numeric columns with more distinct values are left out of the draft with a
        :class:`~ppdp.exceptions.PPDPWarning` (free text or identifiers do not belong in a
        schema); a label with more classes is an error.
    missing_values : sequence of str or int
        Tokens meaning "missing" (e.g. ``["?"]``): excluded from categories and bounds and
        written into the schema.

    Returns
    -------
    Schema
        A draft, with ``nan_policy="error"``.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataValidationError(f"df must be a pandas DataFrame, not {type(df).__name__}")
    max_categories = check_int("max_categories", max_categories, minimum=1)
    tokens = tuple(missing_values)
    if label is not None and label not in df.columns:
        raise DataValidationError(f"label ({label!r}) is not a column of the data")
    warnings.warn(PrivacyLeakWarning(LEAK_MESSAGE), stacklevel=2)
    columns: list[NumericColumn | CategoricalColumn] = []
    for name in df.columns:
        if name == label:
            continue
        if not isinstance(name, str):
            raise DataValidationError(f"column names must be strings; got {name!r}")
        s = df[name]
        if tokens:
            s = s.mask(s.isin(list(tokens)))
        s = s.dropna()
        if pd.api.types.is_bool_dtype(s.dtype):
            columns.append(NumericColumn(name, 0, 1, integer=True))
            continue
        if not pd.api.types.is_numeric_dtype(s.dtype):
            converted = pd.to_numeric(s, errors="coerce")
            if len(s) and converted.notna().all():
                s = converted
        if pd.api.types.is_numeric_dtype(s.dtype):
            vals = s.to_numpy(dtype=np.float64)
            vals = vals[np.isfinite(vals)]
            if vals.size == 0:
                warnings.warn(
                    PPDPWarning(
                        f"column {name!r} has no finite values and was left out of the draft"
                    ),
                    stacklevel=2,
                )
                continue
            lo, hi = float(vals.min()), float(vals.max())
            integer = bool(pd.api.types.is_integer_dtype(s.dtype)) or bool(
                np.all(vals == np.round(vals))
            )
            if integer:
                lo, hi = math.floor(lo), math.ceil(hi)
            if not lo < hi:
                hi = lo + 1
            columns.append(
                NumericColumn(
                    name, int(lo) if integer else lo, int(hi) if integer else hi, integer=integer
                )
            )
            continue
        values = pd.unique(s)
        if len(values) > max_categories:
            warnings.warn(
                PPDPWarning(
                    f"column {name!r} has more than max_categories={max_categories} distinct "
                    "values and was left out of the draft; declare it by hand if it belongs"
                ),
                stacklevel=2,
            )
            continue
        if len(values) == 0:
            warnings.warn(
                PPDPWarning(f"column {name!r} has no values and was left out of the draft"),
                stacklevel=2,
            )
            continue
        columns.append(CategoricalColumn(name, tuple(_sorted_values(values))))
    if not columns:
        raise DataValidationError("the data has no column that could be drafted")
    label_spec = None
    if label is not None:
        s = df[label]
        if tokens:
            s = s.mask(s.isin(list(tokens)))
        classes = _sorted_values(pd.unique(s.dropna()))
        if len(classes) < 2 or len(classes) > max_categories:
            raise DataValidationError(
                f"label ({label!r}) has {len(classes)} distinct values; a label needs between "
                f"2 and max_categories={max_categories}"
            )
        label_spec = LabelSpec(label, tuple(classes))
    return Schema(columns=tuple(columns), label=label_spec, missing_values=tokens)


def draft_schema_from_file(
    path: str | os.PathLike[str],
    *,
    label: str | None = None,
    max_categories: int = 50,
    missing_values: Sequence[Category] = (),
) -> Schema:
    """Read a CSV or Parquet file and :func:`draft_schema` it (same warning, same caveats)."""
    df = read_table(path)
    return draft_schema(
        df, label=label, max_categories=max_categories, missing_values=missing_values
    )
