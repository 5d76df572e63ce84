"""``ppdp audit``: the black-box privacy audit of a basic mechanism and its positive control."""

from __future__ import annotations

import argparse
import json
import sys

from ppdp.cli import _common as c

# ppdp.audit.MECHANISMS, spelled out so that `ppdp --help` imports no audit code (a test
# keeps the two equal).
_CHOICES = ("laplace", "gaussian", "exponential", "permute-and-flip", "discrete-laplace")
_DESCRIPTION = (
    "Audit a mechanism (Clopper-Pearson lower bound on epsilon, alpha=1e-6) and its positive "
    "control with half the noise (docs/audit.md). Exit 0 iff the mechanism passes and the "
    "control fails; 1 otherwise."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("mechanism", {"choices": _CHOICES}, "the mechanism to audit"),
    ("--epsilon", {"type": float, "default": 1.0}, "the claimed epsilon"),
    ("--delta", {"type": float, "default": 1e-5}, "delta (gaussian only)"),
    ("--draws", {"type": int, "default": None},
     "measurement draws per side, a tenth as many for selection (default: 10^6 for laplace and "
     "gaussian, 2x10^5 for exponential)"),
    ("--seed", {"type": int, "default": None}, "reproducible audit (default: OS entropy)"),
    ("--json", {"action": "store_true"}, "print the results as JSON"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    what = "audit a mechanism's privacy claim empirically (with its half-noise control)"
    c.command(subparsers, "audit", what, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.audit import audit_with_control
    from ppdp.audit.summary import audit_failure, audit_lines

    with c.seeded_quietly():  # an audit is not a release: a seed only makes it reproducible
        outcome = audit_with_control(
            args.mechanism, random_state=args.seed, **c.pick(args, "epsilon delta draws")
        )
    print(json.dumps(outcome.to_dict(), indent=2) if args.json else "\n".join(audit_lines(outcome)))
    failure = audit_failure(outcome, epsilon=args.epsilon)
    if failure is not None:
        sys.stderr.write(f"ppdp: {failure}\n")
        return 1
    return 0
