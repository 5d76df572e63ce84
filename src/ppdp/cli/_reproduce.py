"""``ppdp reproduce``: rerun one of the sources' figures and write CSV, plots and a summary."""

from __future__ import annotations

import argparse
import time

from ppdp import _progress
from ppdp.cli import _common as c

_DESCRIPTION = (
    "Run a registered experiment on the shipped data, seeded, and write its results (CSV), "
    "config (JSON), PNG plots and a summary beside the paper's numbers (docs/experiments.md)."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("experiment", {"nargs": "?"}, "experiment ID (see --list)"),
    ("--list", {"action": "store_true"}, "list the experiments and exit"),
    ("--quick", {"action": "store_true"}, "a reduced grid that runs in under a minute"),
    ("-o --output", {"metavar": "OUT_DIR", "default": None},
     "output folder; None means experiments-results/ID (ID-quick with --quick), whose "
     "previous results are replaced (said on stderr); an OUT_DIR holding a run's results "
     "(its config.json) is refused without --force"),
    ("--force", {"action": "store_true"},
     "replace the results of a previous run in OUT_DIR (files of the same name)"),
    ("--seed", {"type": int, "default": None}, "root seed; None means the experiment's own"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    what = "reproduce a figure of the sources (CSV, PNG plots, markdown summary)"
    c.command(subparsers, "reproduce", what, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.experiments import list_experiments, run_experiment
    from ppdp.experiments.files import results_folder

    if args.list:
        for info in list_experiments():
            print(f"{info.id:18}  {info.title}")
        return 0
    say = c.say("ppdp reproduce", quiet=args.quiet)
    out_dir = results_folder(args.experiment, args.output, say=say, **c.pick(args, "quick force"))
    start = time.monotonic()
    with _progress.step_reporter(f"reproduce {args.experiment}", quiet=args.quiet) as progress:
        result = run_experiment(
            args.experiment, out_dir=out_dir, progress=progress, **c.pick(args, "quick seed")
        )
    print(f"ppdp reproduce {result.experiment_id}: {time.monotonic() - start:.1f} s")
    for path in result.files:
        print(f"  wrote {path}")
    return 0
