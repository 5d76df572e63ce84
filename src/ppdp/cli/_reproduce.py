"""``ppdp reproduce``: rerun one of the sources' figures and write CSV, plots and a summary."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ppdp import _progress

Progress = Callable[[int, int, str], None]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="reproduce a figure of the sources (CSV, PNG plots, markdown summary)",
        description="Run a registered experiment on the shipped data and write its raw results "
        "(CSV), the config it ran (JSON), PNG plots and a markdown summary that puts the "
        "paper's numbers beside ours. Runs are seeded (reproducible, not for real releases). "
        "Progress goes to stderr: a bar on a terminal, one line per unit of work "
        "otherwise, nothing with --quiet.",
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


def _progress_line(done: int, total: int, message: str) -> None:
    sys.stderr.write(f"[{done}/{total}] {message}\n")
    sys.stderr.flush()


@contextmanager
def _reporter(args: argparse.Namespace) -> Iterator[Progress | None]:
    """A bar when stderr is a terminal, progress lines when it is not, nothing with --quiet."""
    if getattr(args, "quiet", False):
        yield None
        return
    if not _progress.is_active():
        yield _progress_line
        return
    with _progress.bar(f"reproduce {args.experiment}", unit="step") as bar:

        def update(done: int, total: int, message: str) -> None:
            bar.set_description(message)
            bar(done, total)

        yield update


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
    with _reporter(args) as progress:
        result = run_experiment(
            args.experiment,
            out_dir=out_dir,
            quick=args.quick,
            seed=args.seed,
            progress=progress,
        )
    print(f"ppdp reproduce {result.experiment_id}: {time.monotonic() - start:.1f} s")
    for path in result.files:
        print(f"  wrote {path}")
    return 0
