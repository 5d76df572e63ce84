"""``ppdp report``: a self-contained HTML quality report of a released table (custodian only)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ppdp.cli._common import add_table_flags, table_separator


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="an HTML quality report of a released table against the private data",
        description="Compare a released table (written by 'ppdp publish', with its "
        "RELEASE.guarantee.json beside it) with the private table it came from: a verdict "
        "(useful / weak / no better than the trivial baseline), the guarantee in words, per "
        "column the real and released marginals, the share of values at the declared bounds, "
        "the correlations, and with --target the accuracy of a classifier trained on the "
        "release. The report reads the private data: it is for the custodian only, is not "
        "differentially private, and costs no budget. Needs matplotlib "
        "(pip install 'ppdp[plots]') and scikit-learn for --target.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "release",
        metavar="RELEASE",
        help="the released table (.csv/.parquet; an LDA projection release is recognised by "
        "its guarantee file), or a model file from 'ppdp train' (.json: then --holdout is "
        "required and --original optional)",
    )
    parser.add_argument(
        "--original",
        metavar="ORIG",
        default=None,
        help="the private table it came from (required for a table)",
    )
    parser.add_argument(
        "--schema",
        metavar="S",
        default=None,
        help="the declared schema (required for a table; a model file carries its own)",
    )
    parser.add_argument(
        "--holdout",
        metavar="TEST",
        default=None,
        help="original rows that took no part in the release, to test the classifier on "
        "(needs --target, but for an LDA projection release); None holds out a random 30%% of "
        "ORIG (optimistic)",
    )
    parser.add_argument(
        "--target",
        metavar="COL",
        default=None,
        help="a categorical column (or the label) to predict; the verdict then rests on "
        "the classifier; None means on the column marginals (an LDA projection release: "
        "always the label)",
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="REPORT.html", help="the HTML report"
    )
    parser.add_argument(
        "--json", default=None, metavar="REPORT.json", help="also write the numbers as JSON"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace existing output files (never an input)"
    )
    parser.add_argument(
        "--no-guarantee",
        action="store_true",
        help="report a table that has no RELEASE.guarantee.json (one ppdp did not release, or "
        "whose guarantee file was lost); the report then says its guarantee is unknown",
    )
    add_table_flags(parser)
    parser.set_defaults(func=_run)


def _sidecar(release: Path) -> tuple[Path, dict[str, Any] | None]:
    from ppdp.exceptions import ParameterError

    side = release.with_name(release.name + ".guarantee.json")
    if not side.exists():
        return side, None
    try:
        data = json.loads(side.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParameterError(
            f"the release's guarantee file {str(side)!r} is corrupt ({exc}); restore it or "
            "move it away to report without a guarantee"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("guarantee"), dict):
        raise ParameterError(
            f"the release's guarantee file {str(side)!r} holds no guarantee; restore it or "
            "move it away to report without a guarantee"
        )
    return side, data


def _run(args: argparse.Namespace) -> int:
    from ppdp.data import Schema
    from ppdp.data.draft import read_table
    from ppdp.evaluate.report import import_matplotlib, lda_projection_report, quality_report
    from ppdp.exceptions import DataValidationError, ParameterError

    import_matplotlib()  # before anything is read: one line naming the extra
    if args.release.lower().endswith(".json"):
        return _run_model(args)
    for flag, value in (("--original", args.original), ("--schema", args.schema)):
        if value is None:
            raise ParameterError(f"{flag} is required to report a released table")
    release_path = Path(args.release)
    side, sidecar = _sidecar(release_path)
    lda = sidecar is not None and sidecar.get("method") == "lda-projection"
    if args.holdout is not None and args.target is None and not lda:
        raise ParameterError("--holdout is only used with --target COL: give the column to predict")
    inputs = [
        ("release", args.release),
        ("release's guarantee file", side),
        ("original", args.original),
        ("schema", args.schema),
        ("holdout", args.holdout),
    ]
    _check_outputs(args, inputs)
    schema = Schema.from_file(args.schema)
    sep = table_separator(args.sep)
    release = read_table(args.release, sep=sep, encoding=args.encoding)
    original = read_table(args.original, sep=sep, encoding=args.encoding)
    holdout = (
        None if args.holdout is None else read_table(args.holdout, sep=sep, encoding=args.encoding)
    )
    if lda:
        assert sidecar is not None
        report = lda_projection_report(
            original, release, schema, sidecar, holdout=holdout, target=args.target
        )
    else:
        head = [str(c) for c in release.columns][:2]
        if sidecar is None and (head[:1] == ["lda_1"] or head == ["feature", "lda_1"]):
            raise DataValidationError(
                f"{args.release!r} looks like an LDA projection release but its guarantee file "
                f"({side}) is missing: it holds the direction; restore it"
            )
        if sidecar is None and not args.no_guarantee:
            raise ParameterError(
                f"the release's guarantee file {str(side)!r} is missing: the report states the "
                "release's guarantee from it; restore it, or add --no-guarantee to report a "
                "table without one"
            )
        report = quality_report(
            original, release, schema, holdout=holdout, target=args.target, guarantee=sidecar
        )
    _write(args, report)
    if sidecar is None:
        print(f"note: no guarantee file ({side}); the report says so")
    return 0


def _check_outputs(args: argparse.Namespace, inputs: list[tuple[str, Any]]) -> None:
    from ppdp._io import check_output
    from ppdp.exceptions import ParameterError

    if args.json is not None and not args.json.lower().endswith(".json"):
        raise ParameterError(f"--json ({args.json!r}) must end in .json")
    sidecars = [] if args.json is None else [("--json", Path(args.json))]
    check_output(
        args.output,
        suffixes=(".html", ".htm"),
        sidecars=sidecars,
        inputs=inputs,
        force=args.force,
    )


def _write(args: argparse.Namespace, report: Any) -> None:
    from ppdp._io import atomic_paths

    out = Path(args.output)
    html = report.to_html()
    paths = [out] if args.json is None else [Path(args.json), out]
    with atomic_paths(*paths) as tmps:
        if args.json is not None:
            tmps[0].write_text(report.to_json(), encoding="utf-8")
        tmps[-1].write_text(html, encoding="utf-8")
    print(report.summary())
    print(f"wrote {out}" + (f" and {args.json}" if args.json else ""))
    print("the report reads the private data: keep it with the custodian, do not publish it")


def _run_model(args: argparse.Namespace) -> int:
    from ppdp.data.draft import read_table
    from ppdp.evaluate.report import model_report
    from ppdp.exceptions import ParameterError
    from ppdp.learn import read_model

    if args.holdout is None:
        raise ParameterError(
            "a model is reported on held-out rows: give --holdout TEST (rows not used to train)"
        )
    inputs = [
        ("model file", args.release),
        ("original", args.original),
        ("schema", args.schema),
        ("holdout", args.holdout),
    ]
    _check_outputs(args, inputs)
    mf = read_model(args.release)
    label = None if mf.schema is None or mf.schema.label is None else mf.schema.label.name
    if args.target is not None and args.target != label:
        raise ParameterError(
            f"--target {args.target!r} is not the model's label ({label!r}); leave it out"
        )
    sep = table_separator(args.sep)
    holdout = read_table(args.holdout, sep=sep, encoding=args.encoding)
    original = (
        None
        if args.original is None
        else read_table(args.original, sep=sep, encoding=args.encoding)
    )
    _write(args, model_report(mf, holdout, original=original))
    return 0
