"""``ppdp demo``: private statistics, tables and models of the shipped Adult data."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="private statistics and tables of the shipped Adult data, end to end",
        description="Release private statistics, private tables (DP-PCA, DP-LDA synthetic "
        "data, and the per-record baselines) and private models of the shipped Adult data "
        "(45,222 rows) through a fresh budget ledger; print one screen per part, each release "
        "with its one-line guarantee and a utility table, and the commands to run next on your "
        "own data. The run folder holds the ledger, the released tables and demo.log (every "
        "guarantee in full, every table); -v prints that full text instead.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("ppdp-demo"),
        help="folder in which the run folder (ledger, releases, demo.log) is made",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise for experiments (not for real releases)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import warnings

    from ppdp.demo import render_demo, run_demo
    from ppdp.exceptions import InsecureRandomnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        report = run_demo(output_dir=args.output_dir, random_state=args.seed)
    print("\n".join(render_demo(report, full=bool(args.verbose))))
    return 0
