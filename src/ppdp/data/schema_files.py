"""Schema files: what ``ppdp schema draft`` and ``ppdp schema check`` do, for a Python caller.

:func:`draft_schema_file` drafts a schema from a table and writes it (or returns it as JSON);
:func:`describe_schema` says what a schema declares; :func:`check_table_lines` reads a table
against a schema and says, for the custodian only, which values the schema does not declare
and what share of each numeric column its bounds clip. :func:`clipping_lines` is that
clipping table, also printed by a dry run of ``ppdp publish`` and ``ppdp train``.

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

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.exceptions import ParameterError, PPDPError

__all__ = [
    "SCHEMA_SUFFIXES",
    "DraftResult",
    "check_table_lines",
    "clipping_lines",
    "describe_schema",
    "draft_schema_file",
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
    """

    schema: Any
    path: Path | None
    warnings: list[str]

    def written_line(self) -> str:
        """``wrote OUT (12 columns, label 'income')``."""
        label = self.schema.label
        tail = f", label {label.name!r}" if label is not None else ""
        return f"wrote {self.path} ({len(self.schema.columns)} columns{tail})"


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
) -> DraftResult:
    """Draft a schema from the table ``data`` and write it to ``output`` (if given).

    The output is checked before the data are read (a ``.json``, ``.yaml`` or ``.yml``
    file, not the data, not an existing file unless ``force``; a missing folder is
    created). The other parameters are those of
    :func:`ppdp.data.draft.draft_schema_from_file`. Warnings (the leak warning among them)
    are returned as lines rather than raised.
    """
    from ppdp._io import check_output
    from ppdp.data.draft import draft_schema_from_file

    out = None if output is None else Path(output)
    if out is not None and out.suffix.lower() not in SCHEMA_SUFFIXES:
        raise ParameterError(f"--output ({str(out)!r}) must end in .json, .yaml or .yml")
    if out is not None and out.parent.is_dir():  # a missing folder is created by to_file
        check_output(out, inputs=[("data", data)], force=force)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema = draft_schema_from_file(
            data,
            label=label,
            max_categories=max_categories,
            missing_values=tuple(missing_values),
            exclude=tuple(exclude),
            max_integer_codes=max_integer_codes,
            sep=sep,
            encoding=encoding,
        )
    lines = [f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught]
    if out is not None:
        schema.to_file(out)
    return DraftResult(schema, out, lines)


def describe_schema(schema: Any) -> list[str]:
    """Lines saying what ``schema`` declares: columns, label, encoded width, row-norm bound."""
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
    return lines


def clipping_lines(schema: Any, report: Any) -> list[str]:
    """One line per numeric column: declared bounds, values clipped, their share.

    ``report`` is the custodian's :class:`~ppdp.data.EncodeReport` of the table.
    """
    n = max(int(report.n_rows), 1)
    lines = [f"  {'column':<20} {'declared bounds':<28} {'clipped':>9} {'share':>7}"]
    for col in schema.numeric_columns:
        k = int(report.clipped.get(col.name, 0))
        bounds = f"[{col.lower:g}, {col.upper:g}]"
        lines.append(f"  {col.name:<20} {bounds:<28} {k:>9,} {k / n:>7.1%}")
    return lines


def _same_value(v: object) -> str:
    """A value as text, an integral float written as an integer (1.0 and 1 are the same)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _undeclared_lines(schema: Any, df: Any, max_values: int) -> list[str]:
    columns = [(c.name, c.categories) for c in schema.categorical_columns]
    if schema.label is not None:
        columns.append((schema.label.name, schema.label.classes))
    lines = ["undeclared values per column (most frequent first):"]
    for name, declared in columns:
        known = {_same_value(v) for v in declared}
        values = df[name].dropna()
        counts = values[~values.map(_same_value).isin(known)].value_counts()
        if counts.empty:
            continue
        shown = ", ".join(f"{v!r} ({k:,})" for v, k in counts.head(max_values).items())
        more = len(counts) - max_values
        tail = f", and {more:,} more" if more > 0 else ""
        lines.append(
            f"  {name}: {int(counts.sum()):,} values, {len(counts):,} distinct: {shown}{tail}"
        )
    return lines if len(lines) > 1 else [*lines, "  none"]


def _declared_stand_ins(schema: Any) -> dict[str, object]:
    """Categorical and label columns replaced by a declared value, so that undeclared
    values (already listed) do not stop the clipping count of the numeric columns."""
    out: dict[str, object] = {c.name: c.categories[0] for c in schema.categorical_columns}
    if schema.label is not None:
        out[schema.label.name] = schema.label.classes[0]
    return out


def check_table_lines(
    schema: Any,
    data: str | os.PathLike[str],
    *,
    max_values: int = 10,
    sep: str | None = None,
    encoding: str = "utf-8",
) -> list[str]:
    """Read ``data`` against ``schema``: the undeclared values and the clipping per column.

    For the custodian's eyes only (the lines show values of the data). ``max_values``:
    at most this many undeclared values listed per column, most frequent first.
    """
    from ppdp.data.draft import read_table
    from ppdp.data.encoding import encode

    if max_values < 1:
        raise ParameterError(f"--max-values ({max_values}) must be an integer >= 1")
    df = read_table(data, columns=schema.column_names, sep=sep, encoding=encoding)
    lines = [f"{data}: {len(df):,} rows (your own data: not released, not for sharing)"]
    lines += _undeclared_lines(schema, df, max_values)
    if not schema.numeric_columns:
        return lines
    try:
        report = encode(schema, df.assign(**_declared_stand_ins(schema)), log=False)[2]
    except PPDPError as exc:  # a problem a release would refuse: said in one line
        return [*lines, f"values clipped to the declared bounds: not computed ({exc})"]
    return [*lines, "values clipped to the declared bounds:", *clipping_lines(schema, report)]
