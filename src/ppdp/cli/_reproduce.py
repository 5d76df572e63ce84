"""``ppdp reproduce``: rerun one of the sources' figures and write CSV, plots and a summary."""

from __future__ import annotations

import argparse
import sys
import time


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="reproduce a figure of the sources (CSV, PNG plots, markdown summary)",
        description="Run a registered experiment on the shipped data and write its raw results "
        "(CSV), the config it ran (JSON), PNG plots and a markdown summary that puts the "
        "paper's numbers beside ours. Runs are seeded (reproducible, not for real releases). "
        "Progress goes to stderr.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("experiment", nargs="?", help="experiment ID (see --list)")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument(
        "--quick", action="store_true", help="a reduced grid that runs in under a minute"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT_DIR",
        default=None,
        help="output folder; None means experiments-results/ID (ID-quick with --quick)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="root seed; None means the experiment's own"
    )
    parser.set_defaults(func=_run)


def _progress(done: int, total: int, message: str) -> None:
    sys.stderr.write(f"[{done}/{total}] {message}\n")
    sys.stderr.flush()


def _run(args: argparse.Namespace) -> int:
    from ppdp.experiments import EXPERIMENTS, list_experiments, run_experiment

    if args.list:
        for info in list_experiments():
            print(f"{info.id:18}  {info.title}")
        return 0
    if args.experiment is None or args.experiment not in EXPERIMENTS:
        what = (
            "no experiment given"
            if args.experiment is None
            else (f"unknown experiment {args.experiment!r}")
        )
        sys.stderr.write(f"ppdp: error: {what}; known: {', '.join(EXPERIMENTS)}\n")
        return 2
    from pathlib import Path

    from ppdp._io import check_output_folder

    out_dir = args.output
    if out_dir is None:
        out_dir = Path("experiments-results") / (args.experiment + ("-quick" if args.quick else ""))
    # Checked before the run, not after it: the folder's own previous results are replaced.
    check_output_folder(out_dir)
    start = time.monotonic()
    result = run_experiment(
        args.experiment,
        out_dir=out_dir,
        quick=args.quick,
        seed=args.seed,
        progress=_progress,
    )
    print(f"ppdp reproduce {result.experiment_id}: {time.monotonic() - start:.1f} s")
    for path in result.files:
        print(f"  wrote {path}")
    return 0
