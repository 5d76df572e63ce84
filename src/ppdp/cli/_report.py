"""``ppdp report``: a thin layer over :func:`ppdp.evaluate.files.report_file`."""

from __future__ import annotations

import argparse
from typing import Any

from ppdp.cli import _common as c

_DESCRIPTION = (
    "Compare a released table (with its RELEASE.guarantee.json) or a model file with the private "
    "data: a verdict, the guarantee in words, marginals, clipping, correlations and, with "
    "--target, a classifier's accuracy (docs/report.md); for a group-by release, each "
    "statistic's error against its true value on the bounded rows, its intervals' coverage and "
    "the rows each cap dropped. For the custodian only: not private, "
    "costs no budget. --sep, --encoding and --decimal describe the original's (and the "
    "holdout's) format; the release is read as ppdp wrote it (UTF-8, its separator and "
    "decimal mark detected). A read that leaves many values undeclared gives no verdict and "
    "says why."
)
_TEXT_TABLE = (c.SEP, c.ENCODING, c.DECIMAL)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("release", {"metavar": "RELEASE"},
     "the released table (.csv/.parquet; a group-by release too), or a model file from "
     "'ppdp train' (needs --holdout)"),
    ("--original", {"metavar": "ORIG", "default": None}, "the private table (needed for a table)"),
    ("--schema", {"metavar": "S", "default": None},
     "the declared schema (needed for a table; a model file carries its own)"),
    ("--holdout", {"metavar": "TEST", "default": None},
     "original rows that took no part in the release (default: 30%% of ORIG, optimistic)"),
    ("--target", {"metavar": "COL", "default": None},
     "a categorical column to predict (default: judge by the marginals)"),
    ("-o --output", {"required": True, "metavar": "REPORT.html"}, "the HTML report"),
    ("--json", {"default": None, "metavar": "REPORT.json"}, "also write the numbers as JSON"),
    ("--force", {"action": "store_true"}, "replace existing output files (never an input)"),
    ("--no-guarantee", {"action": "store_true"},
     "report a table without RELEASE.guarantee.json (its guarantee is then unknown)"),
    *((f, o, f"{t}: the original's and the holdout's") for f, o, t in _TEXT_TABLE),
    c.SCHEDULER, c.DASK_TIMEOUT,
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    what = "an HTML quality report of a released table against the private data"
    c.command(subparsers, "report", what, _DESCRIPTION, *_FLAGS, func=_run)


def _progress_lines(args: argparse.Namespace) -> Any:
    """Stage lines on stderr where progress bars would be drawn (a terminal, or
    ``PPDP_PROGRESS=1``; never with ``-q``): a piped stderr keeps its one error line."""
    from ppdp import _progress

    if args.quiet or not _progress.is_active():
        return None
    return c.say("ppdp report")


def _run(args: argparse.Namespace) -> int:
    from ppdp.evaluate.files import report_file
    from ppdp.evaluate.report import NOT_JUDGED

    done = report_file(
        args.release,
        json_output=args.json,
        **c.pick(args, "output original schema holdout target force no_guarantee scheduler"),
        **c.table_args(args),
        progress=_progress_lines(args),
    )
    print(done.report.headline())
    for line in done.report.details():
        print(f"  {line}")
    if getattr(done.report, "verdict", None) == NOT_JUDGED:  # stdout may go to a file
        c.say("ppdp report: warning")(f"no verdict: {done.report.verdict_basis}")
    print(f"wrote {done.paths[0]}" + (f" and {args.json}" if args.json else ""))
    print("the report reads the private data: keep it with the custodian, do not publish it")
    if done.note is not None:
        print(done.note)
    return 0
