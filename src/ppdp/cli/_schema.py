"""``ppdp schema draft|check``: thin layers over :mod:`ppdp.data.schema_files`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppdp.cli import _common as c

_DRAFT_TEXT = (
    "Propose a schema from the data: bounds from the minimum and maximum, categories from the "
    "observed values. These leak the data unless they are public knowledge: it is marked "
    "'draft: true', which releases refuse; review it, then delete that line."
)
# fmt: off
_DRAFT: tuple[c.Flag, ...] = (
    ("data", {"type": Path}, "CSV (optionally compressed) or Parquet file"),
    ("-o --output", {"type": Path, "default": None},
     "write the schema here (.json, .yaml or .yml); default: print JSON to stdout"),
    ("--label", {"default": None}, "column to declare as the label"),
    ("--max-categories", {"type": int, "default": 50},
     "leave out non-numeric columns with more distinct values"),
    ("--missing-value", {"action": "append", "default": [], "metavar": "TOKEN"},
     "a token that means 'missing' (e.g. '?'); repeat for several"),
    ("--force", {"action": "store_true"}, "replace an existing --output file (never the data)"),
    ("--exclude", {"action": "append", "default": [], "metavar": "COL"},
     "leave this column out (an ID, free text); repeat for several"),
    ("--max-integer-codes", {"type": int, "default": 12},
     "integer columns with at most this many values are categorical (0: never)"),
    c.SEP, c.ENCODING, c.DECIMAL,
)
_CHECK: tuple[c.Flag, ...] = (
    ("schema", {"type": Path}, "schema file (.json, .yaml or .yml)"),
    ("--data", {"default": None, "metavar": "D"},
     "also read D: undeclared values, share clipped, identifier-like columns (yours only); "
     "exit 2 if a release would refuse D"),
    ("--max-values", {"type": int, "default": 10, "metavar": "N"},
     "with --data: list at most N undeclared values per column (most frequent first)"),
    c.SEP, c.ENCODING, c.DECIMAL,
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``schema`` and its actions to the ``ppdp`` parser."""
    what = "Declared schemas: the public bounds, categories and classes every mechanism relies on."
    short = "draft or check a declared schema"
    actions = c.group(subparsers, "schema", short, what, "schema_action")
    short = "propose a schema from a CSV or Parquet file (leaks unless the bounds are public)"
    c.command(actions, "draft", short, _DRAFT_TEXT, *_DRAFT, func=_draft)
    short = "validate a schema file and print its encoding"
    c.command(actions, "check", short, None, *_CHECK, func=_check)


def _draft(args: argparse.Namespace) -> int:
    from ppdp.data.schema_files import draft_schema_file

    result = draft_schema_file(
        args.data,
        missing_values=args.missing_value,
        **c.pick(args, "output force label max_categories exclude max_integer_codes"),
        **c.table_args(args),
    )
    for line in result.warnings:
        sys.stderr.write(f"ppdp: warning: {line}\n")
    if result.path is None:
        sys.stdout.write(result.schema.to_json())
    else:
        print(result.written_line())
    return 0


def _check(args: argparse.Namespace) -> int:
    from ppdp.data.schema import Schema
    from ppdp.data.schema_files import check_table, describe_schema

    schema = Schema.from_file(args.schema)
    print(f"{args.schema}: valid schema", *describe_schema(schema), sep="\n")
    draft = [schema.draft_refusal()] if schema.draft else []  # every release refuses it
    result = None
    if args.data is not None:
        result = check_table(schema, args.data, max_values=args.max_values, **c.table_args(args))
        print(*result.lines, sep="\n")
        for line in result.warnings:
            sys.stderr.write(f"ppdp: warning: {line}\n")
    for line in [*draft, *(result.refusals if result else [])]:  # a release refuses: exit 2
        sys.stderr.write(f"ppdp: error: {line}\n")
    return 2 if draft else result.exit_code if result else 0
