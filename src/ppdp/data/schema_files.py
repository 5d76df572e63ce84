"""Schema files: what ``ppdp schema draft`` and ``ppdp schema check`` do, for a Python caller.

:func:`draft_schema_file` drafts a schema from a table and writes it (or returns it as JSON);
:func:`describe_schema` says what a schema declares; :func:`check_table` reads a table
against a schema and says, for the custodian only, which values the schema does not declare,
what share of each numeric column its bounds clip, which declared features look like
identifiers, and why a release would refuse the data. :func:`clipping_lines` is that
clipping table and :func:`identifier_warnings` that identifier check, also run by a dry run
of ``ppdp publish`` and ``ppdp train``.

Examples
--------
>>> from ppdp.data.schema_files import describe_schema
>>> from ppdp.data import Schema
>>> schema = Schema.from_dict({"columns": [
...     {"name": "age", "type": "numeric", "lower": 17, "upper": 90}]})
>>> describe_schema(schema)[0]
'  columns: 1 (1 numeric, 0 categorical); no label'
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp.exceptions import (
    MissingColumnsError,
    ParameterError,
    PPDPWarning,
    user_stacklevel,
)

__all__ = [
    "SCHEMA_SUFFIXES",
    "DraftResult",
    "TableCheck",
    "bounds_text",
    "check_table",
    "check_table_lines",
    "clipping_lines",
    "describe_schema",
    "draft_schema_file",
    "identifier_warnings",
    "impute_text",
    "imputed_lines",
    "review_draft",
]

#: The file names a schema may have.
SCHEMA_SUFFIXES = (".json", ".yaml", ".yml")


@dataclass(frozen=True)
class DraftResult:
    """What :func:`draft_schema_file` drafted.

    Attributes
    ----------
    schema : Schema
        The draft (to be edited before any release: its bounds leak the data).
    path : Path or None
        Where it was written (None: not written).
    warnings : list of str
        Each warning the draft raised, as one line ``Category: message``.
    dropped : dict of str to str
        The columns the draft left out (an identifier, a column with no values, dates it
        cannot declare), each with why, a phrase that follows the column's name
        (:func:`ppdp.data.draft.draft_schema_with_dropped`); the warnings say the same.
    """

    schema: Any
    path: Path | None
    warnings: list[str]
    dropped: dict[str, str] = field(default_factory=dict)

    def written_line(self) -> str:
        """``wrote OUT (12 columns, label 'income')``."""
        label = self.schema.label
        tail = f", label {label.name!r}" if label is not None else ""
        n_cols = len(self.schema.columns) + len(self.schema.open_columns)
        return f"wrote {self.path} ({n_cols} columns{tail})"


@dataclass(frozen=True)
class TableCheck:
    """What :func:`check_table` found in a table (for the custodian's eyes only).

    Attributes
    ----------
    lines : list of str
        The report: rows read, undeclared values per column, the clipping table.
    warnings : list of str
        One line each: declared features that look like identifiers.
    refusals : list of str
        One line each: why a release would refuse the data (missing values under
        ``nan_policy: error``, a missing label, undeclared categories without an ``other``
        bucket, undeclared classes, non-numbers in a numeric column). Empty when a release
        would accept it.
    undeclared : dict of str to (int, int)
        Per categorical column (and the label) whose declared list does not cover the data:
        how many values lie outside it and how many distinct ones (counts only, as the
        ``undeclared values`` lines say them).
    """

    lines: list[str]
    warnings: list[str]
    refusals: list[str]
    undeclared: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """``2`` when a release would refuse the data, else ``0`` (``ppdp schema check``)."""
        return 2 if self.refusals else 0

    def all_lines(self) -> list[str]:
        """The report, then the warnings and the refusals under a heading each."""
        out = list(self.lines)
        if self.warnings:
            out += ["warnings:", *(f"  {w}" for w in self.warnings)]
        if self.refusals:
            out += ["a release would refuse this data:", *(f"  {r}" for r in self.refusals)]
        return out


def draft_schema_file(
    data: str | os.PathLike[str],
    *,
    output: str | os.PathLike[str] | None = None,
    force: bool = False,
    label: str | None = None,
    max_categories: int = 50,
    missing_values: Sequence[str] = (),
    exclude: Sequence[str] = (),
    max_integer_codes: int = 12,
    sep: str | None = None,
    encoding: str = "utf-8",
    decimal: str | None = None,
) -> DraftResult:
    """Draft a schema from the table ``data`` and write it to ``output`` (if given).

    The output is checked before the data are read (a ``.json``, ``.yaml`` or ``.yml``
    file, not the data, not an existing file unless ``force``; a missing folder is
    created). The table is read by :func:`ppdp.data.read_table` (``sep``, ``encoding`` and
    ``decimal`` go to it), drafted by :func:`ppdp.data.draft_schema` (the
    other parameters are its own) and reviewed by :func:`review_draft` (missing values,
    integer columns drafted as numeric). Warnings (the leak warning among them) are
    returned as lines rather than raised.
    """
    from ppdp._io import check_output
    from ppdp.data.draft import draft_schema_with_dropped, read_table

    out = None if output is None else Path(output)
    if out is not None and out.suffix.lower() not in SCHEMA_SUFFIXES:
        raise ParameterError(f"--output ({str(out)!r}) must end in .json, .yaml or .yml")
    if out is not None and out.parent.is_dir():  # a missing folder is created by to_file
        check_output(out, inputs=[("data", data)], force=force)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = read_table(data, sep=sep, encoding=encoding, decimal=decimal)
        schema, dropped = draft_schema_with_dropped(
            df,
            label=label,
            max_categories=max_categories,
            missing_values=tuple(missing_values),
            exclude=tuple(exclude),
            max_integer_codes=max_integer_codes,
        )
        imputed = schema.nan_policy != "impute"
        schema = review_draft(schema, df, max_categories=max_categories)
        imputed = imputed and schema.nan_policy == "impute"
    lines = [f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught]
    if out is not None and out.suffix.lower() == ".json":
        schema.to_file(out)  # JSON has no comments: the warnings say it
    elif out is not None:
        from ppdp._io import atomic_path

        with atomic_path(out) as tmp:
            tmp.write_text(_draft_header(imputed) + schema.to_yaml(), encoding="utf-8")
    return DraftResult(schema, out, lines, dropped)


def _draft_header(imputed: bool) -> str:
    """The comment a YAML draft starts with: what to replace before any release."""
    lines = [
        "DRAFT read from the data: its bounds and categories leak the data unless they are",
        "public knowledge. Replace them by public bounds and full domains before any release.",
    ]
    if imputed:
        lines += [
            "Some columns have missing values: nan_policy is 'impute', and each 'impute' constant",
            "is read from the declaration (the middle of the bounds, the first category), never",
            "from the data: a mean or a mode would leak. Edit them together with the bounds.",
        ]
    return "".join(f"# {line}\n" for line in lines)


def _missing_mask(s: Any, tokens: Sequence[object], numeric: bool) -> Any:
    """Where ``s`` is missing: NaN/None/NaT, a missing-value token, or (numeric) not
    finite. A date column's values are dates, not numbers: pass ``numeric=False``."""
    import numpy as np
    import pandas as pd

    miss = s.isna()
    if tokens:
        miss = miss | s.isin(list(tokens))
    if numeric:
        values = pd.to_numeric(s.mask(miss), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        miss = miss | ~np.isfinite(values)
    return np.asarray(miss, dtype=bool)


def _declared_impute(col: Any) -> Any:
    """An ``impute`` constant read from the declaration alone, never from the data.

    The middle of the bounds (rounded down for an integer column), or the first category.
    """
    from ppdp.data.schema import CategoricalColumn

    if isinstance(col, CategoricalColumn):
        return col.categories[0]
    mid = (col.lower + col.upper) / 2.0
    if col.integer:
        return math.floor(mid)
    short = float(f"{mid:.6g}")  # 305183.205 rather than 305183.20499999996
    return short if col.lower <= short <= col.upper else mid


def review_draft(schema: Any, df: Any, *, max_categories: int = 50) -> Any:
    """Review a drafted ``schema`` against the table ``df`` it was drafted from.

    Issues a :class:`~ppdp.exceptions.PPDPWarning` for each of these, and returns the
    schema to write:

    * Feature columns with missing values (NaN, a missing-value token, a non-finite number)
      are named with their counts, and the draft declares ``nan_policy: impute`` with an
      ``impute`` constant for every feature column (a schema under ``impute`` needs one for
      each): the middle of the declared bounds (rounded down for an integer column), or
      the first declared category. These come from the declaration, never from the data's
      statistics: a mean or a mode would leak, and no budget pays for them.
    * A label with missing values is named: a class cannot be imputed; drop those rows.
    * Integer columns drafted as numeric with between 3 and ``max_categories`` distinct
      values, each seen twice on average, are named: if their integers are codes (a
      diagnosis, a region), declare them categorical.
    * Boolean classes (a True/False label) become ``0``/``1``, which match them, so that
      the schema file can be read back (files refuse booleans among declared values).
    """
    import pandas as pd

    from ppdp.data.schema import LabelSpec, Schema

    tokens = schema.missing_values
    missing = {}
    for col in schema.columns:
        n = int(_missing_mask(df[col.name], tokens, _is_number(col)).sum())
        if n:
            missing[col.name] = n
    codes: list[str] = []
    for col in schema.numeric_columns:
        if not col.integer or col.date:
            continue
        keep = ~_missing_mask(df[col.name], tokens, numeric=True)
        k = int(pd.to_numeric(df[col.name][keep], errors="coerce").nunique())
        if 3 <= k <= max_categories and int(keep.sum()) >= 2 * k:  # values repeat
            codes.append(f"{col.name!r} ({k} values)")
    if codes:
        warnings.warn(
            PPDPWarning(
                f"integer column(s) drafted as numeric: {', '.join(codes)}; if a column's "
                "integers are codes (a diagnosis, a region), declare it categorical with its "
                "full code list"
            ),
            stacklevel=user_stacklevel(),
        )
    label = schema.label
    if label is not None:
        n = int(_missing_mask(df[label.name], tokens, numeric=False).sum())
        if n:
            warnings.warn(
                PPDPWarning(
                    f"label {label.name!r} has {n:,} missing value(s): a missing class cannot "
                    "be imputed; drop those rows before any release"
                ),
                stacklevel=user_stacklevel(),
            )
        if any(isinstance(v, bool) for v in label.classes):
            label = LabelSpec(label.name, tuple(int(v) for v in label.classes))
    columns = schema.columns
    policy = schema.nan_policy
    if missing:
        names = ", ".join(f"{name!r} ({n:,})" for name, n in missing.items())
        warnings.warn(
            PPDPWarning(
                f"missing values in {names}: a release under nan_policy 'error' would refuse "
                "them, so the draft declares nan_policy 'impute' with an 'impute' constant for "
                "every column, read from its declaration (the middle of the bounds, the first "
                "category), never from the data (a mean or a mode would leak); edit them with "
                "the bounds, or clean the data and declare nan_policy 'error'"
            ),
            stacklevel=user_stacklevel(),
        )
        policy = "impute"
        columns = tuple(dataclasses.replace(c, impute=_declared_impute(c)) for c in columns)
    return Schema(
        columns=columns,
        label=label,
        row_norm_bound=schema.row_norm_bound,
        missing_values=tokens,
        nan_policy=policy,
        keep=schema.keep,
        open_columns=schema.open_columns,
        privacy_unit=schema.privacy_unit,
        per_person=schema.per_person,
        draft=schema.draft,
    )


def identifier_warnings(schema: Any, df: Any, *, min_rows: int = 20) -> list[str]:
    """One line per declared feature whose values are unique in (nearly) every row.

    An identifier (a visit number, a patient code) is no feature: declared numeric its
    bounds are arbitrary, declared categorical every row is its own category, and either way
    each record is singled out. Flagged: at least ``min_rows`` values, distinct in at least
    99% of them, integers or text (a continuous measurement is distinct in every row too
    and is not flagged, nor is a date column: a run of distinct dates is a feature).
    """
    import numpy as np
    import pandas as pd

    lines = []
    for col in schema.columns:
        if getattr(col, "date", False):
            continue  # dates distinct in every row (a date range) are a feature
        numeric = _is_number(col)
        s = df[col.name][~_missing_mask(df[col.name], schema.missing_values, numeric)]
        if len(s) < min_rows:
            continue
        if numeric:
            values = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
            if not np.all(values == np.round(values)):
                continue
        k = int(s.nunique())
        if k >= 0.99 * len(s):
            lines.append(
                f"column {col.name!r}: {k:,} distinct values in {len(s):,} rows; it looks like "
                "an identifier: drop it from the schema"
            )
    return lines


def _is_number(col: Any) -> bool:
    """Whether a column's raw values are numbers: a numeric column, not a date column."""
    from ppdp.data.schema import NumericColumn

    return isinstance(col, NumericColumn) and not col.date


def bounds_text(col: Any) -> str:
    """A numeric column's declared bounds as a schema writes them: ``[17, 90]``, or
    ``[2015-01-01, 2024-12-31]`` for a date column."""
    if col.date:
        from ppdp.data.dates import day_text

        return f"[{day_text(col.lower)}, {day_text(col.upper)}]"
    return f"[{col.lower:g}, {col.upper:g}]"


def describe_schema(schema: Any) -> list[str]:
    """Lines saying what ``schema`` declares: columns, label, encoded width, row-norm
    bound, and each date column with its bounds as dates."""
    label = schema.label
    lines = [
        f"  columns: {len(schema.columns)} ({schema.p1} numeric, {schema.p2} categorical)"
        + (
            f"; label {label.name!r} with {label.n_classes} classes"
            if label is not None
            else "; no label"
        ),
        f"  encoded features: {schema.n_features}"
        + (
            f" ({schema.layout(include_label=True).n_features} with the label block)"
            if label is not None
            else ""
        ),
        f"  max row L2 norm: {schema.max_row_l2_norm:.6g}",
    ]
    for col in schema.numeric_columns:
        if col.date:
            form = f", written {col.date_format!r}" if col.date_format else ""
            lines.append(f"  date column {col.name!r}: {bounds_text(col)}{form}")
    return lines


def clipping_lines(schema: Any, report: Any) -> list[str]:
    """One line per numeric column: declared bounds, values clipped, their share.

    ``report`` is the custodian's :class:`~ppdp.data.EncodeReport` of the table.
    """
    n = max(int(report.n_rows), 1)
    lines = [f"  {'column':<20} {'declared bounds':<28} {'clipped':>9} {'share':>7}"]
    for col in schema.numeric_columns:
        k = int(report.clipped.get(col.name, 0))
        bounds = bounds_text(col) + (" log scale" if col.scale == "log" else "")
        lines.append(f"  {_column_name(col.name):<20} {bounds:<28} {k:>9,} {k / n:>7.1%}")
    return lines


def imputed_lines(schema: Any, report: Any) -> list[str]:
    """One line per column whose missing values were filled: its impute constant, how many
    values were filled and their share; empty when none was (the custodian's own view).

    ``report`` is the custodian's :class:`~ppdp.data.EncodeReport` of the table.
    """
    n = max(int(report.n_rows), 1)
    filled = [(schema.column(name), int(k)) for name, k in report.imputed.items() if k]
    if not filled:
        return []
    lines = [f"  {'column':<20} {'impute constant':<22} {'filled':>9} {'share':>7}"]
    for col, k in filled:
        constant = impute_text(col)
        lines.append(f"  {_column_name(col.name):<20} {constant:<22} {k:>9,} {k / n:>7.1%}")
    return lines


def impute_text(column: Any) -> str:
    """A column's impute constant as a schema writes it: ``50``, ``'F'`` or, for a date
    column, ``2020-01-01``."""
    value = column.impute
    if getattr(column, "date", False):
        from ppdp.data.dates import day_text

        return day_text(value)
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _column_name(name: str) -> str:
    """A column's name for a table of lines: quoted when spaces around it would hide."""
    return repr(name) if name != name.strip() else name


def _same_value(v: object) -> str:
    """A value as text, an integral float written as an integer (1.0 and 1 are the same)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _undeclared_counts(schema: Any, df: Any) -> dict[str, Any]:
    """Per categorical column (and the label), the counts of its values outside the declared
    list, most frequent first; only the columns that have some."""
    columns = [(c.name, c.categories) for c in schema.categorical_columns]
    if schema.label is not None:
        columns.append((schema.label.name, schema.label.classes))
    out = {}
    for name, declared in columns:
        known = {_same_value(v) for v in declared}
        values = df[name].dropna()
        counts = values[~values.map(_same_value).isin(known)].value_counts()
        if not counts.empty:
            out[name] = counts
    return out


def _undeclared_lines(undeclared: dict[str, Any], max_values: int) -> list[str]:
    lines = ["undeclared values per column (most frequent first):"]
    for name, counts in undeclared.items():
        shown = ", ".join(f"{v!r} ({k:,})" for v, k in counts.head(max_values).items())
        more = len(counts) - max_values
        tail = f", and {more:,} more" if more > 0 else ""
        lines.append(
            f"  {name}: {int(counts.sum()):,} values, {len(counts):,} distinct: {shown}{tail}"
        )
    return lines if len(lines) > 1 else [*lines, "  none"]


def check_table(
    schema: Any,
    data: str | os.PathLike[str],
    *,
    max_values: int = 10,
    sep: str | None = None,
    encoding: str = "utf-8",
    decimal: str | None = None,
) -> TableCheck:
    """Read ``data`` against ``schema``: what a release would make of it, and refuse.

    For the custodian's eyes only (the lines show values of the data). The table is
    encoded in total mode (:func:`~ppdp.data.encoding.encode_collecting`): nothing stops the
    report, and every problem that :func:`~ppdp.data.encoding.encode` would raise, hence
    every reason a release would refuse the data, is collected.

    Parameters
    ----------
    schema : Schema
        The declared schema.
    data : path
        CSV or Parquet file, read by :func:`ppdp.data.read_table` (``sep``, ``encoding``
        and ``decimal`` go to it); only the schema's columns are read. A file without the
        label's column (a table to score) has its features checked, and a line says the
        label was not.
    max_values : int, default 10
        At most this many undeclared values listed per column, most frequent first.

    Returns
    -------
    TableCheck
        The report lines, the warnings (identifier-like features) and the refusals.
    """
    from ppdp.data.draft import read_table
    from ppdp.data.encoding import encode_collecting

    if isinstance(max_values, bool) or not isinstance(max_values, int) or max_values < 1:
        raise ParameterError(f"--max-values ({max_values!r}) must be an integer >= 1")

    def read(columns: Sequence[str]) -> Any:
        return read_table(data, columns=columns, sep=sep, encoding=encoding, decimal=decimal)

    unchecked = []
    try:
        df = read(schema.data_columns)
    except MissingColumnsError as exc:
        label = schema.label
        if label is None or exc.missing != (label.name,):
            raise
        schema = schema.without_label()  # a table to score: its features alone
        df = read(schema.data_columns)
        unchecked = [f"label {label.name!r} is not a column of {data}: not checked (features only)"]
    lines = [f"{data}: {len(df):,} rows (your own data: not released, not for sharing)"]
    lines += unchecked
    undeclared = _undeclared_counts(schema, df)
    lines += _undeclared_lines(undeclared, max_values)
    lines += _not_number_lines(schema, df, max_values)
    report, problems = encode_collecting(schema, df)[2:]
    if schema.numeric_columns:
        lines += ["values clipped to the declared bounds:", *clipping_lines(schema, report)]
    if imputed := imputed_lines(schema, report):
        lines += ["missing values filled with the schema's impute constants:", *imputed]
    refusals = [str(error) for error in problems.errors()]
    if schema.privacy_unit is not None:
        unit_lines, unit_refusal = _unit_lines(schema.privacy_unit, df)
        lines += unit_lines
        refusals += unit_refusal
    counted = {name: (int(c.sum()), len(c)) for name, c in undeclared.items()}
    return TableCheck(lines, identifier_warnings(schema, df), refusals, counted)


def _not_number_lines(schema: Any, df: Any, max_values: int) -> list[str]:
    """The texts of numeric (not date) columns that are not numbers, each with the first data
    row holding it (custodian-only lines), and which texts are read as missing anyway."""
    import numpy as np
    import pandas as pd

    out = []
    for col in schema.numeric_columns:
        if col.date or col.name not in df.columns:
            continue
        s = df[col.name]
        bad = s.notna() & pd.to_numeric(s, errors="coerce").isna()
        if schema.missing_values:
            bad &= ~s.astype(str).isin([str(t) for t in schema.missing_values])
        if not bad.any():
            continue
        texts = s[bad].astype(str)
        rows = np.flatnonzero(bad.to_numpy())
        first: dict[str, int] = {}
        for row, text in zip(rows, texts.to_numpy(), strict=True):
            first.setdefault(str(text), int(row))
        first = dict(list(first.items())[:max_values])
        shown = ", ".join(f"{v!r} (data row {r + 1:,})" for v, r in first.items())
        out.append(f"  {col.name}: {shown}")
    if not out:
        return []
    return [
        "texts in numeric columns that are not numbers (data rows counted from 1 after the "
        "header; empty cells, NA, N/A, n/a, NaN, null and the like are read as missing "
        "already; list any other text that means missing in the schema's missing_values):",
        *out,
    ]


def _unit_lines(unit: Any, df: Any) -> tuple[list[str], list[str]]:
    """Rows per person and what ``max_rows`` would drop (custodian only), and the refusal
    of missing ids: how to choose the cap from the custodian's own data."""
    import numpy as np

    ids = df[unit.column]
    missing = int(ids.isna().sum())
    sizes = ids.dropna().value_counts().to_numpy()
    cap = f"auto, chosen under DP in 1..{unit.max_rows}" if unit.is_auto else unit.max_rows
    lines = [f"privacy unit {unit.column!r} (max_rows {cap}):"]
    if sizes.size:
        q50, q90, q99 = (int(np.ceil(np.quantile(sizes, q))) for q in (0.5, 0.9, 0.99))
        dropped = int(np.maximum(sizes - unit.max_rows, 0).sum())
        over = int((sizes > unit.max_rows).sum())
        which = f"the upper cap {unit.max_rows}" if unit.is_auto else f"max_rows {unit.max_rows}"
        lines += [
            f"  {sizes.size:,} persons; rows per person: median {q50}, 90th percentile {q90}, "
            f"99th percentile {q99}, most {int(sizes.max())}",
            f"  {which} drops {dropped:,} of {int(sizes.sum()):,} rows "
            f"({dropped / sizes.sum():.1%}), from {over:,} persons (a larger cap keeps more rows "
            "and adds noise in proportion)",
        ]
    refusal = (
        [
            f"column {unit.column!r} (the privacy unit) has {missing:,} missing id(s); every "
            "row must name its person (fill them in, or drop those rows)"
        ]
        if missing
        else []
    )
    return lines, refusal


def check_table_lines(
    schema: Any,
    data: str | os.PathLike[str],
    *,
    max_values: int = 10,
    sep: str | None = None,
    encoding: str = "utf-8",
    decimal: str | None = None,
) -> list[str]:
    """:func:`check_table` as lines: the report, then its warnings and refusals, if any."""
    return check_table(
        schema, data, max_values=max_values, sep=sep, encoding=encoding, decimal=decimal
    ).all_lines()
