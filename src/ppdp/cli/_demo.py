"""``ppdp demo``: private statistics, tables and models of the shipped Adult data."""

from __future__ import annotations

import argparse
from pathlib import Path

from ppdp.cli import _common as c

_DESCRIPTION = (
    "Release private statistics, tables and models of the shipped Adult data through a fresh "
    "budget ledger, one screen per part; the run folder holds the ledger, the releases and "
    "demo.log (every guarantee and table in full, which -v prints instead)."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("--output-dir", {"type": Path, "default": Path("ppdp-demo")},
     "folder in which the run folder (ledger, releases, demo.log) is made"),
    ("--seed", {"type": int, "default": None}, "reproducible noise (not for real releases)"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    what = "private statistics and tables of the shipped Adult data, end to end"
    c.command(subparsers, "demo", what, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.demo import render_demo, run_demo

    with c.seeded_quietly():
        report = run_demo(output_dir=args.output_dir, random_state=args.seed)
    print("\n".join(render_demo(report, full=bool(args.verbose))))
    return 0
