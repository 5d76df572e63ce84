"""Encoding a table into ``[0, 1]`` features plus one-hot blocks, and back.

:func:`encode` maps each numeric column to ``(v - lower) / (upper - lower)`` after clipping to
its declared bounds (``log1p(v - lower) / log1p(upper - lower)`` for a column declared with
``scale: log``; :meth:`NumericColumn.to_unit <ppdp.data.NumericColumn.to_unit>`), each
categorical column to a one-hot block in declared order, and the label to integer class
codes (optionally also to a one-hot block). It never reads a bound or a domain from the data.
A date column (``date: true``) is a numeric column in days since 1970-01-01: its values
(ISO texts, or texts in its ``date_format``, dates, ``datetime64``) are parsed to day numbers
first (:func:`ppdp.data.dates.parse_dates`), and a value that is not a date is refused like
a non-number in a numeric column.

What is logged and what is released
-----------------------------------
Clipped values, values mapped to an ``other`` bucket, imputed values and rows scaled to the
declared ``row_norm_bound`` are *counted*. The counts go to the custodian's log (logger
``"ppdp.custodian"``, level INFO) and to the :class:`EncodeReport` returned on request. They
describe the private data, so they must never be part of a release. Error messages name the
column and a count, never a value or a row.

Total mode (``on_invalid="mask"``)
----------------------------------
A data-dependent error is itself an output: "column 'dx': 2 value(s) are not among the
declared categories" tells whoever reads it how many records hold an undeclared value, at no
cost in ε. Harmless when only the custodian sees errors; a free counting oracle when an
analyst chooses the schema or the parameters (a service wrapper, a shared notebook). With
``on_invalid="mask"`` no condition that depends on the *values* raises: each record is mapped
on its own to a declared value (a non-number or missing numeric value to the column's
``impute`` constant, else the midpoint of its bounds; an undeclared or missing category to
``other``, else ``impute``, else the first declared category; an undeclared or missing class
to the first declared class). The map acts on one record at a time, so replacing one record
changes one encoded record: every sensitivity stays valid. The counts go to the custodian
log and to :attr:`EncodeReport.masked` only. Structural problems (a missing column, a wrong
type of table) do not depend on the values and still raise.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ppdp.data.dates import date_form, day_texts, parse_dates
from ppdp.data.names import near_names
from ppdp.data.schema import CategoricalColumn, Category, NumericColumn, ReadOnlyMapping
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from ppdp.data.schema import Schema

__all__ = [
    "CUSTODIAN_LOGGER",
    "ON_INVALID",
    "EncodeReport",
    "ValidationProblems",
    "decode",
    "encode",
    "encode_collecting",
    "encode_flagging_rows",
]

#: ``"raise"`` (the custodian's default: a data-dependent problem is an error naming the
#: column and a count) or ``"mask"`` (total: nothing data-dependent raises; see above).
ON_INVALID = ("raise", "mask")

#: Name of the logger that receives data-dependent counts (custodian's eyes only).
CUSTODIAN_LOGGER = "ppdp.custodian"
_custodian_log = logging.getLogger(CUSTODIAN_LOGGER)

# A scaled row may come out a few ulps longer than the target norm; shrinking the factor by
# this much keeps every clipped row's computed norm at or below the bound.
_NORM_SHRINK = 1.0 - 8 * np.finfo(np.float64).eps


def _frozen_counts(counts: Mapping[str, int]) -> Mapping[str, int]:
    return ReadOnlyMapping({k: int(v) for k, v in counts.items() if v})


@dataclass(frozen=True)
class EncodeReport:
    """Counts of the corrections :func:`encode` made. For the custodian only, never released.

    Attributes
    ----------
    n_rows : int
        Rows encoded.
    clipped : mapping of str to int
        Per numeric column, values outside the declared bounds that were clipped.
    other : mapping of str to int
        Per categorical column, undeclared values mapped to the declared ``other`` bucket.
    imputed : mapping of str to int
        Per column, missing values replaced by the declared ``impute`` constant.
    rows_norm_clipped : int
        Rows scaled down to the declared ``row_norm_bound``.
    masked : mapping of str to int
        Per column, values that would have raised and were mapped to a declared value
        instead (``on_invalid="mask"`` only).

    Columns with a zero count are left out of the mappings.
    """

    n_rows: int
    clipped: Mapping[str, int] = field(default_factory=dict)
    other: Mapping[str, int] = field(default_factory=dict)
    imputed: Mapping[str, int] = field(default_factory=dict)
    rows_norm_clipped: int = 0
    masked: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "clipped", _frozen_counts(self.clipped))
        object.__setattr__(self, "other", _frozen_counts(self.other))
        object.__setattr__(self, "imputed", _frozen_counts(self.imputed))
        object.__setattr__(self, "masked", _frozen_counts(self.masked))

    @property
    def total_clipped(self) -> int:
        """Number of values clipped to bounds, over all columns."""
        return sum(self.clipped.values())

    @property
    def has_corrections(self) -> bool:
        """True when anything was clipped, mapped to ``other``, imputed, norm-clipped or masked."""
        return bool(
            self.clipped or self.other or self.imputed or self.rows_norm_clipped or self.masked
        )

    def __add__(self, other: EncodeReport) -> EncodeReport:
        if not isinstance(other, EncodeReport):
            return NotImplemented

        def merge(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, 0) + v
            return out

        return EncodeReport(
            n_rows=self.n_rows + other.n_rows,
            clipped=merge(self.clipped, other.clipped),
            other=merge(self.other, other.other),
            imputed=merge(self.imputed, other.imputed),
            rows_norm_clipped=self.rows_norm_clipped + other.rows_norm_clipped,
            masked=merge(self.masked, other.masked),
        )

    def summary(self) -> str:
        """One line of counts, for the custodian's log."""

        def fmt(d: Mapping[str, int]) -> str:
            return ", ".join(f"{k!r}: {v}" for k, v in d.items()) or "none"

        return (
            f"encoded {self.n_rows} rows; clipped to bounds: {fmt(self.clipped)}; "
            f"mapped to 'other': {fmt(self.other)}; imputed: {fmt(self.imputed)}; "
            f"rows scaled to row_norm_bound: {self.rows_norm_clipped}; "
            f"masked (on_invalid='mask'): {fmt(self.masked)}"
        )


def log_report(report: EncodeReport) -> None:
    """Send an encoding report to the custodian's log (INFO when anything was corrected)."""
    if report.has_corrections:
        _custodian_log.info("%s", report.summary())
    else:
        _custodian_log.debug("%s", report.summary())


# ---------------------------------------------------------------------- input checks
def _as_frame(schema: Schema, data: Any) -> pd.DataFrame:
    names = schema.column_names
    if isinstance(data, pd.DataFrame):
        df = data
    elif isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise DataValidationError(
                f"data must be 2-D (rows x columns); got an array with {data.ndim} dimension(s)"
            )
        if data.dtype == object or data.dtype.kind not in "biuf":
            raise DataValidationError(
                f"data: arrays of dtype {data.dtype} are not accepted; pass a pandas DataFrame "
                "(object and ragged arrays are refused)"
            )
        if data.shape[1] != len(names):
            raise DataValidationError(
                f"data has {data.shape[1]} columns; the schema declares {len(names)} "
                f"({', '.join(repr(n) for n in names)})"
            )
        df = pd.DataFrame(data, columns=list(names))
    elif isinstance(data, Mapping):
        try:
            df = pd.DataFrame(dict(data))
        except ValueError as exc:
            raise DataValidationError(
                "data: columns of a mapping must be 1-D and of equal length"
            ) from exc
    else:
        raise ParameterTypeError(
            f"data ({type(data).__name__}) must be a pandas DataFrame, a mapping of columns "
            "or a 2-D numeric array"
        )
    if df.columns.has_duplicates:
        dup = df.columns[df.columns.duplicated()][0]
        raise DataValidationError(f"data: column {dup!r} appears more than once")
    missing = [n for n in names if n not in df.columns]
    if missing:
        hint = ""
        if schema.label is not None and missing == [schema.label.name]:
            hint = " (to encode features only, use schema.without_label())"
        hint += _one_column_hint(df) or near_names(missing, [str(c) for c in df.columns])
        raise DataValidationError(
            f"data: missing column(s) {', '.join(repr(m) for m in missing)} declared in the "
            f"schema{hint}"
        )
    return df


def _is_numeric_token(t: Category) -> bool:
    return isinstance(t, int) and not isinstance(t, bool)


def _token_mask(s: pd.Series, tokens: tuple[Category, ...]) -> NDArray[np.bool_] | None:
    if not tokens:
        return None
    if pd.api.types.is_numeric_dtype(s.dtype):
        tokens = tuple(t for t in tokens if _is_numeric_token(t))
        if not tokens:
            return None
    mask = s.isin(list(tokens)).to_numpy(dtype=bool)
    return mask if mask.any() else None


def _one_column_hint(df: pd.DataFrame) -> str:
    """Why a frame of one column whose name holds a separator lacks the schema's columns."""
    if len(df.columns) != 1:
        return ""
    name = str(df.columns[0])
    found = next((sep for sep in (";", "\t", "|") if sep in name), None)
    if found is None:
        return ""
    shown = "'\\t'" if found == "\t" else repr(found)
    return (
        f"; the data has one column whose name holds {shown}: the file was read with the "
        f"wrong separator (pandas.read_csv(..., sep={shown}))"
    )


def _not_numbers_error(name: str, count: int, hint: str = "") -> DataValidationError:
    return DataValidationError(
        f"column {name!r}: {count} value(s) are not numbers (declared numeric){hint}"
    )


#: A number written with a thousands separator: ``1.234,5``, ``1,234.5``, ``1 234``, ``1'234``.
_THOUSANDS = re.compile(r"^\s*[-+]?\d{1,3}(?:([.,' \u00a0\u202f])\d{3})+(?:[.,]\d+)?\s*$")


#: A number written with a decimal comma and no thousands separator: ``12,5``, ``-0,25``.
_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d*,\d+\s*$")


def _not_numbers_hint(text: pd.Series) -> str:
    """What the refused values look like, said by their shape only (no value is shown)."""
    values = text.astype(str)
    if values.map(lambda v: _THOUSANDS.match(v) is not None).all():
        return (
            "; they are written with a thousands separator (like 1.234,5 or 1,234.5): write "
            "the numbers without it"
        )
    if values.map(lambda v: _DECIMAL_COMMA.match(v) is not None).all():
        return (
            "; they are written with a decimal comma (like 12,5): read the table with "
            "decimal=',' (pandas.read_csv(..., decimal=','); --decimal , on the command line)"
        )
    if values.nunique() == 1:
        return (
            "; they are all the same text: if it means 'missing', list it in the schema's "
            "missing_values"
        )
    return ""


def _date_hint(col: NumericColumn) -> str:
    """What a date column's values must look like (from its declaration alone)."""
    return f"; write them as {date_form(col.date_format)}"


def _not_dates_error(name: str, count: int, hint: str) -> DataValidationError:
    return DataValidationError(
        f"column {name!r}: {count} value(s) are not dates (declared date: true){hint}"
    )


def _undeclared_error(what: str, name: str, count: int, hint: str) -> DataValidationError:
    noun = "classes" if what == "label" else "categories"
    fix = (
        "declare them"
        if what == "label"
        else "declare them, or declare an 'other' bucket for this column"
    )
    return DataValidationError(
        f"{what} {name!r}: {count} value(s) are not among the declared {noun}{hint}; {fix}"
    )


#: The order in which one column's value checks run in :func:`encode` (its first failing
#: check is the error), so that collected problems raise the same error as in memory.
_CHECK_ORDER = {"not_numbers": 0, "not_dates": 0, "undeclared": 0, "missing": 1}


@dataclass(frozen=True)
class ValidationProblems:
    """Value-dependent problems found by :func:`encode_collecting`, counted, not raised.

    A partition of a distributed table cannot raise the in-memory error by itself: its
    count would be the partition's, not the table's. Partitions collect their problems;
    the merged collection (``+``) raises the error :func:`encode` would have raised on
    the whole table, with the whole table's count (:meth:`raise_first`). Like the error
    messages, it holds column names and counts, never a value.

    Attributes
    ----------
    counts : mapping
        ``(position, check, kind, what, name) -> count``; ``position`` is the column's
        place in the schema (the label last), ``check`` the order of the check.
    hints : mapping
        ``name -> hint`` shown with an undeclared-category error (the dtype mismatch).
    """

    counts: Mapping[tuple[int, int, str, str, str], int] = field(default_factory=dict)
    hints: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def __add__(self, other: ValidationProblems) -> ValidationProblems:
        if not isinstance(other, ValidationProblems):
            return NotImplemented
        counts = dict(self.counts)
        for k, v in other.counts.items():
            counts[k] = counts.get(k, 0) + v
        hints = {**other.hints, **self.hints}
        for name in self.hints.keys() & other.hints.keys():  # partitions that disagree
            if self.hints[name] != other.hints[name]:
                hints.pop(name)
        return ValidationProblems(counts, hints)

    def _error(self, key: tuple[int, int, str, str, str]) -> DataValidationError:
        _, _, kind, what, name = key
        count = self.counts[key]
        if kind == "not_numbers":
            return _not_numbers_error(name, count, self.hints.get(name, ""))
        if kind == "not_dates":
            return _not_dates_error(name, count, self.hints.get(name, ""))
        if kind == "undeclared":
            return _undeclared_error(what, name, count, self.hints.get(name, ""))
        return _missing_error(name, count, what)

    def first_error(self) -> DataValidationError | None:
        """The error :func:`encode` raises on the whole table (None when there is none)."""
        return self._error(min(self.counts)) if self.counts else None

    def errors(self) -> list[DataValidationError]:
        """Every problem as the error :func:`encode` would raise for it, in check order.

        The first is :meth:`first_error`; ``ppdp schema check --data`` lists them all.
        """
        return [self._error(key) for key in sorted(self.counts)]

    def raise_first(self) -> None:
        """Raise :meth:`first_error` when there is one."""
        error = self.first_error()
        if error is not None:
            raise error


class _Collector:
    """Where :func:`encode_collecting` records problems while encoding in total mode."""

    def __init__(self, schema: Schema) -> None:
        names = [c.name for c in schema.columns]
        if schema.label is not None:
            names.append(schema.label.name)
        self._position = {n: i for i, n in enumerate(names)}
        self.counts: dict[tuple[int, int, str, str, str], int] = {}
        self.hints: dict[str, str] = {}
        self.rows: dict[str, NDArray[np.bool_]] = {}

    def add(
        self,
        kind: str,
        what: str,
        name: str,
        count: int,
        hint: str = "",
        *,
        rows: NDArray[np.bool_],
    ) -> None:
        if count:
            key = (self._position[name], _CHECK_ORDER[kind], kind, what, name)
            self.counts[key] = self.counts.get(key, 0) + int(count)
            if hint:
                self.hints.setdefault(name, hint)
            seen = self.rows.get(name)
            self.rows[name] = rows.copy() if seen is None else seen | rows

    def problems(self) -> ValidationProblems:
        return ValidationProblems(dict(self.counts), dict(self.hints))


def _missing_error(name: str, count: int, what: str = "column") -> DataValidationError:
    if what == "label":  # whatever the nan_policy: a class is never made up
        return DataValidationError(
            f"label {name!r}: {count} missing value(s) (empty, NaN or a missing-value token); "
            "a missing label cannot be imputed: drop those rows from the data"
        )
    return DataValidationError(
        f"{what} {name!r}: {count} missing or non-finite value(s) (NaN, inf or a missing-value "
        "token); nan_policy is 'error': clean the data, or declare nan_policy 'impute' with an "
        "'impute' constant for every column"
    )


def _numeric_values(
    s: pd.Series,
    col: NumericColumn,
    schema: Schema,
    imputed: dict[str, int],
    masked: dict[str, int] | None = None,
    collect: _Collector | None = None,
) -> NDArray[np.float64]:
    """The column as float64 with missing values imputed or refused (may be a read-only view).

    ``masked`` (a dict: total mode) receives the count of non-numbers and of missing values
    that would have raised; they become the ``impute`` constant or the bounds' midpoint.
    ``collect`` (with ``masked``) also records what would have raised, by kind.
    """
    tokens = _token_mask(s, schema.missing_values)
    if col.date:
        if tokens is not None:
            s = s.mask(tokens)
        values, not_dates = parse_dates(s, col.date_format)
        bad = int(np.count_nonzero(not_dates))
        if bad and masked is None:
            raise _not_dates_error(col.name, bad, _date_hint(col))
        if bad and collect is not None:
            collect.add("not_dates", "column", col.name, bad, _date_hint(col), rows=not_dates)
    elif pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        if tokens is not None:
            values = np.where(tokens, np.nan, values)
    else:
        if tokens is not None:
            s = s.mask(tokens)
        num = pd.to_numeric(s, errors="coerce")
        not_numbers = num.isna().to_numpy() & s.notna().to_numpy()
        bad = int(np.count_nonzero(not_numbers))
        if bad and masked is None:
            raise _not_numbers_error(col.name, bad, _not_numbers_hint(s[not_numbers]))
        if bad and collect is not None:
            hint = _not_numbers_hint(s[not_numbers])
            collect.add("not_numbers", "column", col.name, bad, hint, rows=not_numbers)
        values = num.to_numpy(dtype=np.float64, na_value=np.nan)
    if np.isfinite(values).all():
        return values
    nonfinite = ~np.isfinite(values)
    n_bad = int(np.count_nonzero(nonfinite))
    if schema.nan_policy == "impute":
        imputed[col.name] = n_bad
        return np.where(nonfinite, col.impute, values)
    if masked is None:
        raise _missing_error(col.name, n_bad)
    masked[col.name] = n_bad
    if collect is not None:
        collect.add("missing", "column", col.name, n_bad, rows=nonfinite)
    fill = col.impute if col.impute is not None else (col.lower + col.upper) / 2.0
    return np.where(nonfinite, fill, values)


def _codes(
    s: pd.Series,
    name: str,
    categories: tuple[Category, ...],
    schema: Schema,
    *,
    other: Category | None,
    impute: Category | None,
    what: str,
    counts_other: dict[str, int],
    counts_imputed: dict[str, int],
    counts_masked: dict[str, int] | None = None,
    collect: _Collector | None = None,
) -> NDArray[np.int64]:
    """Integer codes of ``s`` in ``categories``; ``counts_masked`` (a dict) selects total mode.

    ``collect`` (with ``counts_masked``) also records what would have raised, by kind.
    """
    tokens = _token_mask(s, schema.missing_values)
    missing = s.isna().to_numpy(dtype=bool, copy=True)
    if tokens is not None:
        missing |= tokens
    declared_str = all(isinstance(c, str) for c in categories)
    if declared_str and pd.api.types.is_integer_dtype(s.dtype):
        s = s.astype(str)  # categories "1", "2" declared as text, data read as integers
    codes = pd.Index(list(categories), dtype=object).get_indexer(s).astype(np.int64)
    undeclared = (codes < 0) & ~missing
    n_undeclared = int(np.count_nonzero(undeclared))
    fallback = other if other is not None else impute if impute is not None else categories[0]
    if n_undeclared:
        hint = ""
        if other is None:
            data_str = pd.api.types.is_string_dtype(s.dtype) or s.dtype == object
            if declared_str != data_str:
                kind = "strings" if declared_str else "not strings"
                hint = f" (the data has dtype {s.dtype}; the declared values are {kind})"
        if other is None and counts_masked is not None:
            codes[undeclared] = categories.index(fallback)
            counts_masked[name] = counts_masked.get(name, 0) + n_undeclared
            if collect is not None:
                collect.add("undeclared", what, name, n_undeclared, hint, rows=undeclared)
        elif other is None:
            raise _undeclared_error(what, name, n_undeclared, hint)
        else:
            codes[undeclared] = categories.index(other)
            counts_other[name] = n_undeclared
    n_missing = int(np.count_nonzero(missing))
    if n_missing:
        if impute is not None and schema.nan_policy == "impute":
            codes[missing] = categories.index(impute)
            counts_imputed[name] = n_missing
        elif counts_masked is not None:
            codes[missing] = categories.index(fallback)
            counts_masked[name] = counts_masked.get(name, 0) + n_missing
            if collect is not None:
                collect.add("missing", what, name, n_missing, rows=missing)
        else:
            raise _missing_error(name, n_missing, what)
    return codes


# ---------------------------------------------------------------------- encode / decode
def encode(
    schema: Schema,
    data: pd.DataFrame | Mapping[str, ArrayLike] | NDArray[Any],
    *,
    include_label: bool = False,
    log: bool = True,
    order: Literal["C", "F"] = "C",
    on_invalid: Literal["raise", "mask"] = "raise",
) -> tuple[NDArray[np.float64], NDArray[np.int64] | None, EncodeReport]:
    """Encode ``data`` with ``schema`` into ``(X, y, report)``.

    Parameters
    ----------
    schema : Schema
        The declared schema; nothing about the domain is read from ``data``.
    data : DataFrame, mapping of columns, or 2-D numeric array
        Must hold every column of ``schema.column_names`` (extra columns are ignored). A
        numeric array must have exactly those columns, in that order.
    include_label : bool, default False
        Append the label's one-hot block to ``X`` (to publish a whole table: Adult in
        Jiang et al.'s encoding has 35 columns including the label's two dummies).
    log : bool, default True
        Send the report to the custodian's log.
    order : {"C", "F"}, default "C"
        Memory layout of ``X`` ("F" skips the final copy; the Dask engine uses it).
    on_invalid : {"raise", "mask"}, default "raise"
        ``"raise"``: a value-dependent problem is an error naming the column and a count
        (for the custodian). ``"mask"``: total, nothing value-dependent raises; each bad
        value is mapped to a declared one and counted in ``report.masked`` (see the module
        docstring, *Total mode*).

    Returns
    -------
    X : ndarray of float64, shape (n, n_features)
        Every entry in ``[0, 1]``: numeric ``(clip(v) - lower) / (upper - lower)`` (for a
        ``scale="log"`` column ``log1p(clip(v) - lower) / log1p(upper - lower)``; see
        :meth:`NumericColumn.to_unit`), then the one-hot blocks. Rows are scaled to
        ``row_norm_bound`` when one is declared and binds.
    y : ndarray of int64, shape (n,), or None
        Class codes ``0..K-1`` in declared class order; ``None`` when the schema has no label.
    report : EncodeReport
        Counts of clipped, mapped, imputed and norm-clipped values (custodian only).

    Raises
    ------
    DataValidationError
        Missing columns, a missing or non-finite value under ``nan_policy="error"``
        (naming the column, never the value), an undeclared category without an ``other``
        bucket, an undeclared class, non-numeric values in a numeric column, values that
        are not dates in a date column (the message says the form they must take).
    ParameterTypeError
        ``data`` of an unsupported type.
    """
    if on_invalid not in ON_INVALID:
        raise ParameterError(
            f"on_invalid ({on_invalid!r}) must be one of {', '.join(map(repr, ON_INVALID))}"
        )
    return _encode(
        schema, data, include_label=include_label, log=log, order=order, on_invalid=on_invalid
    )


def encode_collecting(
    schema: Schema,
    data: pd.DataFrame | Mapping[str, ArrayLike] | NDArray[Any],
    *,
    include_label: bool = False,
    order: Literal["C", "F"] = "C",
) -> tuple[NDArray[np.float64], NDArray[np.int64] | None, EncodeReport, ValidationProblems]:
    """Encode in total mode and collect what ``on_invalid="raise"`` would have refused.

    For one partition of a distributed table: nothing value-dependent raises here; the
    merged :class:`ValidationProblems` of every partition raise, in the driver, the error
    :func:`encode` gives on the whole table (same message, the whole table's count).
    Structural problems (a missing column) still raise at once. Nothing is logged.

    Returns
    -------
    X, y, report
        As :func:`encode` with ``on_invalid="mask"`` (``report.masked`` counts the values
        that were mapped; meaningful when the caller runs in total mode).
    problems : ValidationProblems
        Empty when :func:`encode` with ``on_invalid="raise"`` would not have raised.
    """
    collect = _Collector(schema)
    X, y, report = _encode(
        schema,
        data,
        include_label=include_label,
        log=False,
        order=order,
        on_invalid="mask",
        collect=collect,
    )
    return X, y, report, collect.problems()


def encode_flagging_rows(
    schema: Schema,
    data: pd.DataFrame | Mapping[str, ArrayLike] | NDArray[Any],
    *,
    include_label: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.int64] | None, EncodeReport, dict[str, Any]]:
    """Encode in total mode and say, row by row, what ``on_invalid="raise"`` would refuse.

    For scoring rows with a released model (post-processing of the user's own rows, never
    a release): every row is encoded, each refused value mapped as the total mode maps it.

    Returns
    -------
    X, y, report
        As :func:`encode` with ``on_invalid="mask"``.
    refused : dict of str to ndarray of bool
        Per column with at least one refused value (schema order), the rows holding one:
        exactly the rows for which :func:`encode` with ``on_invalid="raise"`` would raise
        on that column.
    """
    collect = _Collector(schema)
    X, y, report = _encode(
        schema,
        data,
        include_label=include_label,
        log=False,
        order="C",
        on_invalid="mask",
        collect=collect,
    )
    names = [c.name for c in schema.columns] + ([schema.label.name] if schema.label else [])
    return X, y, report, {n: collect.rows[n] for n in names if n in collect.rows}


def _encode(
    schema: Schema,
    data: Any,
    *,
    include_label: bool,
    log: bool,
    order: Literal["C", "F"],
    on_invalid: str,
    collect: _Collector | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64] | None, EncodeReport]:
    masked: dict[str, int] | None = {} if on_invalid == "mask" else None
    df = _as_frame(schema, data)
    n = len(df)
    layout = schema.layout(include_label=include_label)
    # Built column by column in Fortran order (contiguous column writes), made C-contiguous once.
    X = np.zeros((n, layout.n_features), dtype=np.float64, order="F")
    clipped: dict[str, int] = {}
    other: dict[str, int] = {}
    imputed: dict[str, int] = {}
    rows = np.arange(n)
    for col in schema.columns:
        block = layout.blocks[col.name]
        s = df[col.name]
        if isinstance(col, NumericColumn):
            v = _numeric_values(s, col, schema, imputed, masked, collect)
            n_clip = int(np.count_nonzero(v < col.lower)) + int(np.count_nonzero(v > col.upper))
            if n_clip:
                clipped[col.name] = n_clip
            # col.to_unit, without its clip when no value needs one (a pass saved).
            col._to_unit_into(v, X[:, block.start], clip=n_clip > 0)
        else:
            assert isinstance(col, CategoricalColumn)
            codes = _codes(
                s,
                col.name,
                col.categories,
                schema,
                other=col.other,
                impute=col.impute,
                what="column",
                counts_other=other,
                counts_imputed=imputed,
                counts_masked=masked,
                collect=collect,
            )
            X[rows, block.start + codes] = 1.0
    rows_clipped = _clip_row_norms(schema, X)
    y = None
    if schema.label is not None:
        lab = schema.label
        y = _codes(
            df[lab.name],
            lab.name,
            lab.classes,
            schema,
            other=None,
            impute=None,
            what="label",
            counts_other=other,
            counts_imputed=imputed,
            counts_masked=masked,
            collect=collect,
        )
        if include_label:
            X[rows, layout.blocks[lab.name].start + y] = 1.0
    if order == "C":
        X = np.ascontiguousarray(X)
    report = EncodeReport(
        n_rows=n,
        clipped=clipped,
        other=other,
        imputed=imputed,
        rows_norm_clipped=rows_clipped,
        masked=masked or {},
    )
    if log:
        log_report(report)
    return X, y, report


def _clip_row_norms(schema: Schema, X: NDArray[np.float64]) -> int:
    """Scale feature rows (label block excluded) longer than ``row_norm_bound`` down to it."""
    R = schema.row_norm_bound
    if R is None or np.sqrt(schema.p1 + schema.p2) <= R:
        return 0
    F = X[:, : schema.n_features]
    norms = np.sqrt(np.einsum("ij,ij->i", F, F))
    over = norms > R
    count = int(np.count_nonzero(over))
    if count:
        F[over] *= (R / norms[over] * _NORM_SHRINK)[:, None]
    return count


def decode(schema: Schema, X: ArrayLike, y: ArrayLike | None = None) -> pd.DataFrame:
    """Map an encoded matrix back to a table. Pure post-processing of ``X``; no privacy cost.

    Parameters
    ----------
    schema : Schema
    X : array-like, shape (n, n_features) or (n, n_features + K)
        With the label's one-hot block (the wider shape) the label is decoded from it.
    y : array-like of int, shape (n,), optional
        Class codes ``0..K-1``; take precedence over a label block in ``X``.

    Returns
    -------
    DataFrame
        One column per schema column (and the label when ``y`` or a label block is given).
        Numeric columns: ``lower + clip(x, 0, 1) * (upper - lower)`` (for a ``scale="log"``
        column ``lower + expm1(clip(x, 0, 1) * log1p(upper - lower))``; see
        :meth:`NumericColumn.from_unit`), rounded for integer columns; a date column
        (``date=True``) as ISO texts ``YYYY-MM-DD`` (its day numbers rounded, within its
        bounds); with ``decimals`` declared, rounded to that many decimals and clipped back
        into ``[lower, upper]`` (a bound off the decimal grid stays the bound). Categorical
        columns: the category of the arg-max dummy of the block (the first one on ties). An
        encode→decode round trip is exact for in-bound data (on the declared decimal grid;
        for a log column within floating-point error, unless rounding makes it exact).
    """
    arr = np.asarray(X)
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise DataValidationError(
            f"X must be a 2-D numeric array; got shape {arr.shape} and dtype {arr.dtype}"
        )
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        raise DataValidationError("X contains NaN or inf; decode needs finite values")
    plain = schema.layout()
    widths = [plain.n_features]
    with_label = None
    if schema.label is not None:
        with_label = schema.layout(include_label=True)
        widths.append(with_label.n_features)
    if arr.shape[1] not in widths:
        raise DataValidationError(
            f"X has {arr.shape[1]} columns; the schema encodes to "
            f"{' or '.join(str(w) for w in widths)}"
        )
    n = arr.shape[0]
    out: dict[str, Any] = {}
    for col in schema.columns:
        block = plain.blocks[col.name]
        if isinstance(col, NumericColumn):
            v = col.from_unit(arr[:, block.start])
            if col.decimals is not None:
                # A bound off the decimal grid stays the bound.
                v = np.clip(np.round(v, col.decimals), col.lower, col.upper)
            if col.date:
                out[col.name] = pd.array(day_texts(v), dtype="str")
                continue
            out[col.name] = np.rint(v).astype(np.int64) if col.integer else v
        else:
            assert isinstance(col, CategoricalColumn)
            out[col.name] = _values(col.categories, np.argmax(arr[:, block], axis=1))
    if schema.label is not None:
        lab = schema.label
        codes = None
        if y is not None:
            codes = _check_codes(y, n, lab.n_classes)
        elif with_label is not None and arr.shape[1] == with_label.n_features:
            codes = np.argmax(arr[:, with_label.blocks[lab.name]], axis=1)
        if codes is not None:
            out[lab.name] = _values(lab.classes, codes)
    elif y is not None:
        raise DataValidationError("y was given but the schema declares no label")
    return pd.DataFrame(out)


def _values(categories: tuple[Category, ...], codes: NDArray[np.integer]) -> Any:
    lookup = np.empty(len(categories), dtype=object)
    lookup[:] = list(categories)
    values = lookup[codes]
    if all(isinstance(c, str) for c in categories):
        return pd.array(values, dtype="str")
    if all(isinstance(c, int) and not isinstance(c, bool) for c in categories):
        return values.astype(np.int64)
    return values


def _check_codes(y: ArrayLike, n: int, k: int) -> NDArray[np.int64]:
    codes = np.asarray(y)
    if codes.ndim != 1 or codes.shape[0] != n:
        raise DataValidationError(f"y must have shape ({n},); got {codes.shape}")
    if codes.dtype.kind not in "iu":
        raise DataValidationError(f"y must hold integer class codes; got dtype {codes.dtype}")
    if n and (codes.min() < 0 or codes.max() >= k):
        raise DataValidationError(f"y must hold class codes in 0..{k - 1}")
    return codes.astype(np.int64, copy=False)
