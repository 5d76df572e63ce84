"""``ppdp schema``: draft a schema from data (loudly), or check a schema file."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ppdp.cli._common import add_table_flags

_SCHEMA_SUFFIXES = (".json", ".yaml", ".yml")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="draft or check a declared schema",
        description="Declared schemas: the public bounds, categories and classes every "
        "mechanism relies on.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    actions = parser.add_subparsers(dest="schema_action", metavar="ACTION")
    actions.required = True

    draft = actions.add_parser(
        "draft",
        help="propose a schema from a CSV or Parquet file (leaks unless the bounds are public)",
        description="Propose a schema from the data: bounds from the minimum and maximum, "
        "categories from the observed values. Bounds and categories read from private data "
        "leak it unless they are public knowledge: edit the draft before any release.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    draft.add_argument("data", type=Path, help="CSV (optionally compressed) or Parquet file")
    draft.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="write the schema here (.json, .yaml or .yml); default: print JSON to stdout",
    )
    draft.add_argument("--label", default=None, help="column to declare as the label")
    draft.add_argument(
        "--max-categories",
        type=int,
        default=50,
        help="leave out non-numeric columns with more distinct values",
    )
    draft.add_argument(
        "--missing-value",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a token that means 'missing' (e.g. '?'); repeat for several",
    )
    draft.add_argument(
        "--force", action="store_true", help="replace an existing --output file (never the data)"
    )
    draft.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="COL",
        help="leave this column out (an ID, free text); repeat for several",
    )
    draft.add_argument(
        "--max-integer-codes",
        type=int,
        default=12,
        help="draft integer columns with at most this many distinct values as categorical "
        "(0: never)",
    )
    add_table_flags(draft)
    draft.set_defaults(func=_draft)

    check = actions.add_parser(
        "check",
        help="validate a schema file and print its encoding",
        description="Validate a schema file and print the encoding it defines.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    check.add_argument("schema", type=Path, help="schema file (.json, .yaml or .yml)")
    check.add_argument(
        "--data",
        default=None,
        metavar="D",
        help="also read this table (yours) and print the share of values the declared bounds "
        "clip per column and the undeclared values per column (for the custodian's eyes only)",
    )
    check.add_argument(
        "--max-values",
        type=int,
        default=10,
        metavar="N",
        help="with --data: list at most N undeclared values per column (most frequent first)",
    )
    add_table_flags(check)
    check.set_defaults(func=_check)


def _draft(args: argparse.Namespace) -> int:
    from ppdp._io import check_output
    from ppdp.cli._common import table_separator
    from ppdp.data.draft import draft_schema_from_file
    from ppdp.exceptions import ParameterError

    out: Path | None = args.output
    if out is not None and out.suffix.lower() not in _SCHEMA_SUFFIXES:
        raise ParameterError(f"--output ({str(out)!r}) must end in .json, .yaml or .yml")
    if out is not None and out.parent.is_dir():  # a missing folder is created, as before
        check_output(out, inputs=[("data", args.data)], force=args.force)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema = draft_schema_from_file(
            args.data,
            label=args.label,
            max_categories=args.max_categories,
            missing_values=tuple(args.missing_value),
            exclude=tuple(args.exclude),
            max_integer_codes=args.max_integer_codes,
            sep=table_separator(args.sep),
            encoding=args.encoding,
        )
    for w in caught:
        text = " ".join(str(w.message).split())
        sys.stderr.write(f"ppdp: warning: {w.category.__name__}: {text}\n")
    if out is None:
        sys.stdout.write(schema.to_json())
    else:
        schema.to_file(out)
        print(
            f"wrote {out} ({len(schema.columns)} columns"
            + (f", label {schema.label.name!r}" if schema.label is not None else "")
            + ")"
        )
    return 0


def _check(args: argparse.Namespace) -> int:
    from ppdp.data.schema import Schema

    schema = Schema.from_file(args.schema)
    print(f"{args.schema}: valid schema")
    print(
        f"  columns: {len(schema.columns)} ({schema.p1} numeric, {schema.p2} categorical)"
        + (
            f"; label {schema.label.name!r} with {schema.label.n_classes} classes"
            if schema.label is not None
            else "; no label"
        )
    )
    print(f"  encoded features: {schema.n_features}", end="")
    if schema.label is not None:
        print(f" ({schema.layout(include_label=True).n_features} with the label block)", end="")
    print()
    print(f"  max row L2 norm: {schema.max_row_l2_norm:.6g}")
    if args.data is not None:
        _check_data(schema, args)
    return 0


def _same_value(v: object) -> str:
    """A value as text, an integral float written as an integer (1.0 and 1 are the same)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _check_data(schema: object, args: argparse.Namespace) -> None:
    """The clipping table and the undeclared values of ``--data`` (custodian only)."""
    from ppdp.cli._common import table_separator
    from ppdp.cli._publish import clipping_lines, encode_report
    from ppdp.data.draft import read_table
    from ppdp.exceptions import ParameterError, PPDPError

    if args.max_values < 1:
        raise ParameterError(f"--max-values ({args.max_values}) must be an integer >= 1")
    df = read_table(
        args.data,
        columns=schema.column_names,  # type: ignore[attr-defined]
        sep=table_separator(args.sep),
        encoding=args.encoding,
    )
    print(f"{args.data}: {len(df):,} rows (your own data: not released, not for sharing)")
    columns = [(c.name, c.categories) for c in schema.categorical_columns]  # type: ignore[attr-defined]
    label = schema.label  # type: ignore[attr-defined]
    if label is not None:
        columns.append((label.name, label.classes))
    print("undeclared values per column (most frequent first):")
    any_undeclared = False
    for name, declared in columns:
        known = {_same_value(v) for v in declared}
        values = df[name].dropna()
        counts = values[~values.map(_same_value).isin(known)].value_counts()
        if counts.empty:
            continue
        any_undeclared = True
        shown = ", ".join(f"{v!r} ({k:,})" for v, k in counts.head(args.max_values).items())
        more = len(counts) - args.max_values
        tail = f", and {more:,} more" if more > 0 else ""
        print(f"  {name}: {int(counts.sum()):,} values, {len(counts):,} distinct: {shown}{tail}")
    if not any_undeclared:
        print("  none")
    if not schema.numeric_columns:  # type: ignore[attr-defined]
        return
    try:
        report = encode_report(schema, df.assign(**_declared_stand_ins(schema, df)))
    except PPDPError as exc:  # a problem a release would refuse: said in one line
        print(f"values clipped to the declared bounds: not computed ({exc})")
        return
    print("values clipped to the declared bounds:")
    for line in clipping_lines(schema, report):
        print(line)


def _declared_stand_ins(schema: object, df: object) -> dict[str, object]:
    """Categorical and label columns replaced by a declared value, so that undeclared
    values (already listed) do not stop the clipping count of the numeric columns."""
    out: dict[str, object] = {}
    for col in schema.categorical_columns:  # type: ignore[attr-defined]
        out[col.name] = col.categories[0]
    label = schema.label  # type: ignore[attr-defined]
    if label is not None:
        out[label.name] = label.classes[0]
    return out
