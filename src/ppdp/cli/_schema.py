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
    return 0
