"""``ppdp report``: a thin layer over :func:`ppdp.evaluate.files.report_file`."""

from __future__ import annotations

import argparse

from ppdp.cli import _common as c

_DESCRIPTION = (
    "Compare a released table (written by 'ppdp publish', with its RELEASE.guarantee.json beside "
    "it) with the private table it came from: a verdict (useful / weak / no better than the "
    "trivial baseline), the guarantee in words, per column the real and released marginals, the "
    "share of values at the declared bounds, the correlations, and with --target the accuracy "
    "of a classifier trained on the release. The report reads the private data: it is for the "
    "custodian only, is not differentially private, and costs no budget. Needs matplotlib (pip "
    "install 'ppdp[plots]') and scikit-learn for --target."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("release", {"metavar": "RELEASE"},
     "the released table (.csv/.parquet; an LDA projection release is recognised by its "
     "guarantee file), or a model file from 'ppdp train' (.json: then --holdout is required and "
     "--original optional)"),
    ("--original", {"metavar": "ORIG", "default": None},
     "the private table it came from (required for a table)"),
    ("--schema", {"metavar": "S", "default": None},
     "the declared schema (required for a table; a model file carries its own)"),
    ("--holdout", {"metavar": "TEST", "default": None},
     "original rows that took no part in the release, to test the classifier on (needs "
     "--target, but for an LDA projection release); None holds out a random 30%% of ORIG "
     "(optimistic)"),
    ("--target", {"metavar": "COL", "default": None},
     "a categorical column (or the label) to predict; the verdict then rests on the classifier; "
     "None means on the column marginals (an LDA projection release: always the label)"),
    ("-o --output", {"required": True, "metavar": "REPORT.html"}, "the HTML report"),
    ("--json", {"default": None, "metavar": "REPORT.json"}, "also write the numbers as JSON"),
    ("--force", {"action": "store_true"}, "replace existing output files (never an input)"),
    ("--no-guarantee", {"action": "store_true"},
     "report a table that has no RELEASE.guarantee.json (one ppdp did not release, or whose "
     "guarantee file was lost); the report then says its guarantee is unknown"),
    c.SEP, c.ENCODING, c.SCHEDULER,
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    what = "an HTML quality report of a released table against the private data"
    c.command(subparsers, "report", what, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.evaluate.files import report_file

    done = report_file(
        args.release,
        json_output=args.json,
        **c.pick(args, "output original schema holdout target force no_guarantee scheduler"),
        **c.table_args(args),
    )
    print(done.report.summary())
    print(f"wrote {done.paths[0]}" + (f" and {args.json}" if args.json else ""))
    print("the report reads the private data: keep it with the custodian, do not publish it")
    if done.note is not None:
        print(done.note)
    return 0
