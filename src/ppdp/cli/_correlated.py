"""``ppdp correlated release``: a Pufferfish (Markov Quilt Mechanism) release of a trace.

A thin layer over :func:`ppdp.correlated.files.release_trace_file`; the file formats are
documented there and in ``docs/proofs/pufferfish-mqm.md``.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from ppdp.cli._common import (
    add_seed_and_force_flags,
    print_guarantee,
    refuse_seed_with_ledger,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``correlated`` to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "correlated",
        help="Pufferfish releases of correlated data (Markov Quilt Mechanism)",
        description="Releases of correlated data under Pufferfish privacy.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="correlated_command", metavar="ACTION")
    sub.required = True
    rel = sub.add_parser(
        "release",
        help="release the state histogram of a Markov-chain trace with MQM",
        description="Release the relative-frequency histogram of TRACE.csv (one column with a "
        "header line, one state per line) with the Markov Quilt Mechanism for the class of "
        "chains in THETA.json ({'states': [...], 'transitions': [P, ...], 'initials': null | "
        "[q or null, ...]}). The guarantee is ε-Pufferfish and holds only if the true chain is "
        "in THETA. Invalid input writes nothing and spends nothing.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    rel.add_argument("trace", metavar="TRACE.csv", help="the private trace")
    rel.add_argument("--theta", required=True, metavar="THETA.json", help="the class Θ")
    rel.add_argument("--epsilon", type=float, required=True, help="ε spent by this release")
    rel.add_argument("--query", choices=("histogram",), default="histogram", help="the query")
    rel.add_argument("--method", choices=("exact", "approx"), default="exact", help="max-influence")
    rel.add_argument("-o", "--output", required=True, metavar="OUT.json", help="the release")
    rel.add_argument("--ledger", metavar="L", default=None, help="the dataset's budget ledger")
    rel.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise (NOT for real releases); refused with --ledger unless "
        "--allow-seeded",
    )
    add_seed_and_force_flags(rel)
    rel.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.correlated.files import release_trace_file
    from ppdp.exceptions import InsecureRandomnessWarning

    refuse_seed_with_ledger(args.seed, args.ledger, args.allow_seeded)
    if args.ledger is None:
        sys.stderr.write("ppdp correlated: warning: no --ledger given; the spend is not recorded\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        rel = release_trace_file(
            theta=args.theta,
            trace=args.trace,
            output=args.output,
            epsilon=args.epsilon,
            method=args.method,
            query=args.query,
            ledger=args.ledger,
            seed=args.seed,
            allow_seeded=args.allow_seeded,
            force=args.force,
        )
    print(f"released the histogram to {args.output} (noise scale {rel.noise_scale:.6g})")
    print_guarantee(rel.guarantee, verbose=args.verbose, full_in=args.output)
    if rel.ledger_index is not None:
        print(f"charged in {args.ledger} (entry {rel.ledger_index})")
    if rel.seeded:
        print(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real release"
            + (" (--allow-seeded is recorded in the ledger)" if args.ledger else "")
        )
    return 0
