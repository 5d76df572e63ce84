"""``ppdp audit``: the black-box privacy audit of a basic mechanism and its positive control."""

from __future__ import annotations

import argparse
import json
import sys

_CHOICES = ("laplace", "gaussian", "exponential", "permute-and-flip")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="audit a mechanism's privacy claim empirically (with its half-noise control)",
        description="Run the black-box privacy audit (event selection, then a Clopper-Pearson "
        "lower bound on epsilon at alpha=1e-6) on a mechanism and on its positive control, the "
        "same mechanism with half the noise. Exit 0 iff the mechanism passes and the control "
        "fails; exit 1 otherwise.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("mechanism", choices=_CHOICES, help="the mechanism to audit")
    parser.add_argument("--epsilon", type=float, default=1.0, help="the claimed epsilon")
    parser.add_argument("--delta", type=float, default=1e-5, help="delta (gaussian only)")
    parser.add_argument(
        "--draws",
        type=int,
        default=None,
        help="measurement draws per side (selection uses a tenth); default: 1,000,000 for "
        "laplace and gaussian, 200,000 for the exponential mechanism",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="reproducible audit (default: OS entropy)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import warnings

    from ppdp.audit import audit_with_control
    from ppdp.exceptions import InsecureRandomnessWarning

    n_select = None if args.draws is None else max(100, args.draws // 10)
    with warnings.catch_warnings():
        # An audit is not a release: a seed only makes it reproducible.
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        outcome = audit_with_control(
            args.mechanism,
            epsilon=args.epsilon,
            delta=args.delta,
            n_select=n_select,
            n_measure=args.draws,
            random_state=args.seed,
        )
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        r, c = outcome.result, outcome.control
        print(
            f"ppdp audit {args.mechanism}: {r.n_measure:,} fresh draws per side, "
            f"α = {r.alpha:g} per audit"
        )
        print(f"  {'':22}{'claimed ε':>10}{'ε lower bound':>15}  verdict")
        print(
            f"  {'mechanism':22}{r.claimed_epsilon:>10g}{r.epsilon_lower_bound:>15.4f}  "
            f"{'pass' if r.passed else 'FAIL'}"
        )
        print(
            f"  {'control (½ noise)':22}{c.claimed_epsilon:>10g}{c.epsilon_lower_bound:>15.4f}  "
            f"{'pass' if c.passed else 'fail (as it must)'}"
        )
        print(f"  event: {r.event}")
    if not outcome.control_failed:
        sys.stderr.write(
            "ppdp: the half-noise control passed the audit: the audit has no power here and "
            "is broken (raise --draws)\n"
        )
        return 1
    if not outcome.result.passed:
        sys.stderr.write(
            f"ppdp: {args.mechanism} FAILED its audit: the lower bound "
            f"{outcome.result.epsilon_lower_bound:.4f} exceeds the claimed epsilon "
            f"{args.epsilon:g} (false-positive probability ≤ {outcome.result.alpha:g})\n"
        )
        return 1
    return 0
