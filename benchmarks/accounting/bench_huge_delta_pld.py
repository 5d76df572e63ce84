"""Benchmark: opening a PLD ledger that holds a discrete Laplace event with a huge Δ.

Issue 29: a scalar GroupBy sum (no ``by``) charges ``DiscreteLaplace(l1_sensitivity=2²⁴)``;
building its PLD point by point took 14.7 s and 1.9 GB, in every process that opens the
ledger. This script

1. writes a PLD ledger (total (ε, δ) = (4, 1e-6)) holding one such event (ε = 0.5), then
   opens it in a fresh process (:meth:`Accountant.open_existing`, which verifies the ledger
   and folds every event into the composition) and prints the wall time and the process's
   peak resident memory, beside a process that only imports ppdp;
2. prints the tightness of the PLD ppdp uses against ``dp-accounting``'s own
   ``from_discrete_laplace_mechanism`` (exact point by point; cheap at these Δ), and against
   the worst ε-DP pair, over 1 and 10 compositions at several δ.

Run (on the code under test; ``PYTHONPATH`` picks the source tree)::

    PYTHONPATH=src .venv/bin/python benchmarks/accounting/bench_huge_delta_pld.py
    PYTHONPATH=src .venv/bin/python benchmarks/accounting/bench_huge_delta_pld.py --open-only
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HUGE = 2**24
EPSILON = 0.5
DELTAS = (1e-3, 1e-6, 1e-9)

_CHILD = """
import sys, time
t0 = time.perf_counter()
from ppdp.accounting import Accountant
t1 = time.perf_counter()
if sys.argv[1] != "-":
    with Accountant.open_existing(sys.argv[1]) as acct:
        eps = acct.spent.epsilon
else:
    eps = float("nan")
t2 = time.perf_counter()
# VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec).
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {peak:.0f} {eps!r}")
"""


def _write_ledger(folder: Path, sensitivity: int) -> Path:
    from ppdp.accounting import Accountant
    from ppdp.budget import PrivacyBudget
    from ppdp.mechanisms import DiscreteLaplaceMechanism

    path = folder / f"delta-{sensitivity}.ledger"
    event = DiscreteLaplaceMechanism(epsilon=EPSILON, sensitivity=sensitivity).event
    with Accountant.open(
        path, dataset_id="huge", total=PrivacyBudget(4.0, 1e-6), composition="pld"
    ) as acct:
        acct.spend(event, mechanism="DiscreteLaplace")
    return path


def _child(ledger: str) -> tuple[float, float, float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, ledger],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), float(out[3])


def open_table() -> None:
    """Time and peak memory of a process that opens the ledger (and one that does not)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PPDP_ANCHOR_DIR"] = str(Path(tmp) / "anchors")
        t0 = time.perf_counter()
        huge = _write_ledger(Path(tmp), HUGE)
        write_s = time.perf_counter() - t0
        small = _write_ledger(Path(tmp), 2)
        _, _, base_mb, _ = _child("-")
        _, small_s, small_mb, _ = _child(str(small))
        _, open_s, peak_mb, eps = _child(str(huge))
    print(f"discrete Laplace event, ε = {EPSILON}, in a PLD ledger of total (4, 1e-6)")
    print("| step | wall time (s) | peak RSS (MB) |")
    print("|---|---:|---:|")
    print(f"| write the Δ = 2^24 ledger (one spend, this process) | {write_s:.2f} | - |")
    print(f"| a process that only imports ppdp | - | {base_mb:.0f} |")
    print(
        f"| a fresh process opening a Δ = 2 ledger (reference) | {small_s:.2f} | {small_mb:.0f} |"
    )
    print(f"| a fresh process opening the Δ = 2^24 ledger | {open_s:.2f} | {peak_mb:.0f} |")
    print(f"(Δ = 2^24: spent ε reported {eps:.9f})")


def tightness_table() -> None:
    """ε(δ) of ppdp's PLD against dp-accounting's exact one and the worst ε-DP pair."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    from ppdp.accounting._dlaplace_pld import rounded_pmf
    from ppdp.accounting._tight import DISCRETIZATION, _cached_pld
    from ppdp.mechanisms import DiscreteLaplaceMechanism

    print()
    print(
        "| Δ | k | δ | exact ε (dp-accounting) | ppdp ε | ppdp − exact | worst ε-DP pair ε "
        "| ppdp points | ppdp build (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for log_delta in (10, 14, 24):
        event = DiscreteLaplaceMechanism(epsilon=EPSILON, sensitivity=2**log_delta).event
        exact = None
        if log_delta <= 14:  # point by point: cheap here, 15 s and 1.9 GB at 2^24
            exact = pld.from_discrete_laplace_mechanism(
                parameter=event.noise_parameter,
                sensitivity=event.l1_sensitivity,
                value_discretization_interval=DISCRETIZATION,
            )
        _cached_pld.cache_clear()
        t0 = time.perf_counter()
        ours = _cached_pld(event)
        build_s = time.perf_counter() - t0
        points = len(rounded_pmf(event.noise_parameter, event.l1_sensitivity, DISCRETIZATION))
        pure = pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(event.budget().epsilon, 0.0),
            value_discretization_interval=DISCRETIZATION,
        )
        for k in (1, 10):
            o_k, p_k = (x.self_compose(k) if k > 1 else x for x in (ours, pure))
            e_k = None if exact is None else exact.self_compose(k) if k > 1 else exact
            for delta in DELTAS:
                o = o_k.get_epsilon_for_delta(delta)
                p = p_k.get_epsilon_for_delta(delta)
                e = "-" if e_k is None else f"{e_k.get_epsilon_for_delta(delta):.9f}"
                gap = "-" if e_k is None else f"{o - e_k.get_epsilon_for_delta(delta):+.1e}"
                print(
                    f"| 2^{log_delta} | {k} | {delta:g} | {e} | {o:.9f} | {gap} | {p:.6f} "
                    f"| {points} | {build_s:.3f} |"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--open-only", action="store_true", help="skip the tightness table")
    args = parser.parse_args()
    open_table()
    if not args.open_only:
        tightness_table()


if __name__ == "__main__":
    main()
