"""``ppdp correlated release``: a thin layer over
:func:`ppdp.correlated.files.release_trace_file`."""

from __future__ import annotations

import argparse
import sys

from ppdp.cli import _common as c

_DESCRIPTION = (
    "Release the relative-frequency histogram of TRACE.csv (one state per line) with the Markov "
    "Quilt Mechanism for the class of chains in THETA.json. The guarantee is ε-Pufferfish and "
    "holds only if the true chain is in THETA (docs/proofs/pufferfish-mqm.md)."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("trace", {"metavar": "TRACE.csv"}, "the private trace"),
    ("--theta", {"required": True, "metavar": "THETA.json"}, "the class Θ"), c.EPSILON,
    ("--query", {"choices": ("histogram",), "default": "histogram"}, "the query"),
    ("--method", {"choices": ("exact", "approx"), "default": "exact"}, "max-influence"),
    ("-o --output", {"required": True, "metavar": "OUT.json"}, "the release"),
    c.LEDGER, c.SEED, c.ALLOW_SEEDED, c.FORCE,
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``correlated`` to the ``ppdp`` parser."""
    short = "Pufferfish releases of correlated data (Markov Quilt Mechanism)"
    sub = c.group(subparsers, "correlated", short, None, "correlated_command")
    short = "release the state histogram of a Markov-chain trace with MQM"
    c.command(sub, "release", short, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.correlated.files import release_trace_file

    with c.seeded_quietly():
        names = "theta trace output epsilon method query ledger seed allow_seeded force"
        rel = release_trace_file(**c.pick(args, names))
    if args.ledger is None:  # said once it happened: a refused input spent nothing
        sys.stderr.write("ppdp correlated: warning: no --ledger given; this spend was not "
                         "recorded anywhere\n")  # fmt: skip
    print(f"released the histogram to {args.output} (noise scale {rel.noise_scale:.6g})")
    c.print_guarantee(rel.guarantee, verbose=args.verbose, full_in=args.output)
    indices = [] if rel.ledger_index is None else [rel.ledger_index]
    c.print_release_end(args.ledger, indices, seeded=rel.seeded)
    return 0
