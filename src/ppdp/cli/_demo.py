"""``ppdp demo``: private statistics of the shipped Adult data through a budget ledger."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="release private statistics of the shipped Adult data",
        description="Release private statistics of the shipped Adult data (45,222 rows) through "
        "a fresh budget ledger, and print each release with its guarantee.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--output-dir", type=Path, default=Path("ppdp-demo"), help="folder for the run's ledger"
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

    from ppdp.demo import run_demo
    from ppdp.exceptions import InsecureRandomnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        report = run_demo(output_dir=args.output_dir, random_state=args.seed)

    print(f"ppdp demo: Adult, {report.n_rows:,} rows (UCI Adult, Jiang et al. preprocessing)")
    print(f"ledger: {report.ledger_path}  (total budget {report.total})")
    if report.seeded:
        print("note: --seed was given, so the noise is reproducible and NOT fit for a real release")
    for release in report.releases:
        print()
        print(f"[ledger entry {release.ledger_index}] {release.title}")
        print(f"  guarantee: {release.guarantee}")
        width = max(len(name) for name, _, _ in release.rows)
        print(f"  {'':{width}}  {'private':>12}  {'exact':>12}")
        for name, private, exact in release.rows:
            print(f"  {name:{width}}  {private:12.4f}  {exact:12.4f}")
    print()
    print(f"budget remaining: {report.remaining}")
    if report.refused:
        print(f"one more release (ε=0.1) was refused before touching the data: {report.refused}")
    print(f"check the ledger: ppdp ledger verify {report.ledger_path}")
    print(f"see the spends:   ppdp budget show {report.ledger_path}")
    return 0
