"""Measure the power of the built-in audits: how often they catch too little noise.

Run ``python -m ppdp.audit.power`` (options: ``--trials``, ``--epsilon``, ``--seed``). For
each built-in mechanism and each noise multiplier it runs independent audits at the
default draw counts, still claiming ε, and prints how many FAILed. Multiplier 1.0 is the
correct mechanism (expected failures ≈ 0, at most α = 1e-6 per audit); below 1 the
mechanism is really ``ε / multiplier``-DP (exactly for Laplace; approximately for the
others), so a FAIL is a correct detection. The figures are in ``docs/audit.md``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from ppdp.audit.builtin import MECHANISMS, audit_mechanism
from ppdp.random import SeededRandom

__all__ = ["audit_power"]


def audit_power(
    name: str,
    *,
    noise_multipliers: Sequence[float] = (1.0, 0.9, 0.8, 0.5),
    trials: int = 50,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    profile_epsilon: float | None = None,
    seed: int = 0,
) -> dict[float, tuple[int, float]]:
    """For each multiplier: (number of failed audits out of ``trials``, median ε lower bound)."""
    out: dict[float, tuple[int, float]] = {}
    for m in noise_multipliers:
        source = SeededRandom(np.random.SeedSequence([seed, round(m * 1000)]))
        bounds = []
        fails = 0
        for _ in range(trials):
            r = audit_mechanism(
                name,
                epsilon=epsilon,
                delta=delta,
                noise_multiplier=m,
                profile_epsilon=profile_epsilon,
                random_state=source,
            )
            fails += not r.passed
            bounds.append(r.epsilon_lower_bound)
        out[m] = (fails, float(np.median(bounds)))
    return out


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - a measurement script
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--profile-epsilon",
        type=float,
        default=0.25,
        help="the 'gaussian-profile' row audits this point of the Gaussian privacy profile",
    )
    parser.add_argument("--mechanisms", nargs="*", default=[*MECHANISMS, "gaussian-profile"])
    args = parser.parse_args(argv)
    multipliers = (1.0, 0.95, 0.9, 0.8, 0.5)
    print(
        f"FAILed audits out of {args.trials} (median ε lower bound); mechanisms calibrated for "
        f"ε={args.epsilon:g} (δ=1e-5 for gaussian)"
    )
    print("mechanism".ljust(26) + "".join(f"×{m:<14g}" for m in multipliers))
    for row in args.mechanisms:
        name, profile, label = row, None, row
        if row == "gaussian-profile":
            name, profile = "gaussian", args.profile_epsilon
            label = f"gaussian at ε'={profile:g}"
        res = audit_power(
            name,
            noise_multipliers=multipliers,
            trials=args.trials,
            epsilon=args.epsilon,
            profile_epsilon=profile,
            seed=args.seed,
        )
        cells = "".join(
            f"{f'{res[m][0]}/{args.trials} ({res[m][1]:.3f})':<15}" for m in multipliers
        )
        print(label.ljust(26) + cells, flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    import warnings

    from ppdp.exceptions import InsecureRandomnessWarning

    warnings.simplefilter("ignore", InsecureRandomnessWarning)
    raise SystemExit(main())
