"""Binned Agrawal–Aggarwal EM against the direct O(n·k)-per-iteration EM, in one run.

Target (issue 7): binned EM for n = 500,000 reports and k = 50 bins, 100 iterations, in
under 0.5 s (the one O(n) binning pass included), against a direct implementation that
touches every report in every iteration (``reconstruct_em(..., binned=False)``: the
per-report kernel ``K_jt`` is computed once, then each iteration is two (n × k)
matrix-vector products). Prints one table; the ratio is direct / binned.

Data: a bimodal mixture on [0, 1] (0.4·N(0.3, 0.06²) + 0.6·N(0.7, 0.08²), clipped), Gaussian
noise σ = 0.1, seeded (the seeded noise is for benchmarking only).

Run from the repository root: ``PYTHONPATH=src python benchmarks/bench_local_em.py``
(``--n``, ``--k``, ``--iterations``, ``--repeats``; ``--direct-iterations`` runs the direct
EM for fewer iterations and scales its per-iteration time, if memory or time is short).
``--semiconvergence`` instead prints the iterations/information-loss tables of
``docs/local.md`` (n = 100,000, Laplace b = 0.1, 50 bins).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np

from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.local import (
    AdditiveRandomizer,
    bin_reports,
    reconstruct_bayes,
    reconstruct_em,
    reconstruct_fourier,
    wu_information_loss,
)

TARGET_S = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500_000)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--direct-iterations", type=int, default=None)
    parser.add_argument("--semiconvergence", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore", InsecureRandomnessWarning)
    if args.semiconvergence:
        semiconvergence()
        return

    rng = np.random.default_rng(12345)  # data only; the noise comes from ppdp.noise
    n, k, iters = args.n, args.k, args.iterations
    x = np.where(rng.random(n) < 0.4, rng.normal(0.3, 0.06, n), rng.normal(0.7, 0.08, n))
    x = np.clip(x, 0.0, 1.0)
    r = AdditiveRandomizer(noise="gaussian", scale=0.1, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=1)
    truth = np.histogram(x, bins=k, range=(0.0, 1.0))[0] / n

    def timed(fn, repeats):
        best, out = float("inf"), None
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        return best, out

    t_bin, hist = timed(lambda: bin_reports(w, r, k), args.repeats)
    t_iter, _ = timed(lambda: reconstruct_em(hist, r, k, tol=0, max_iter=iters), args.repeats)
    t_binned, est_b = timed(lambda: reconstruct_em(w, r, k, tol=0, max_iter=iters), args.repeats)
    d_iters = args.direct_iterations or iters
    t_direct, est_d = timed(
        lambda: reconstruct_em(w, r, k, tol=0, max_iter=d_iters, binned=False), 1
    )
    t_direct_full = t_direct * iters / d_iters
    loss = lambda e: 0.5 * float(np.abs(e.probabilities - truth).sum())  # noqa: E731

    print(
        f"# ppdp.local EM benchmark — {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, numpy {np.__version__}"
    )
    print(
        f"# n={n:,} reports, k={k} bins, {iters} iterations, Gaussian σ=0.1 on [0, 1], "
        f"best of {args.repeats}"
    )
    head = f"{'method':<34}{'seconds':>10}{'s/iter':>12}{'vs binned':>11}{'half-L1 to truth':>18}"
    print(head)
    print("-" * len(head))
    print(f"{'binning pass (O(n), once)':<34}{t_bin:>10.4f}{'':>12}{'':>11}{'':>18}")
    print(
        f"{'binned EM iterations only':<34}{t_iter:>10.4f}{t_iter / iters:>12.2e}{'':>11}{'':>18}"
    )
    print(
        f"{'binned EM total (ppdp default)':<34}{t_binned:>10.4f}{t_binned / iters:>12.2e}"
        f"{1.0:>11.1f}{loss(est_b):>18.4f}"
    )
    note = "" if d_iters == iters else f" (×{iters / d_iters:g} from {d_iters} it.)"
    print(
        f"{'direct O(n·k) EM' + note:<34}{t_direct_full:>10.3f}{t_direct / d_iters:>12.2e}"
        f"{t_direct_full / t_binned:>11.1f}{loss(est_d):>18.4f}"
    )
    verdict = "PASS" if t_binned < TARGET_S else "MISS"
    print(
        f"\ntarget: binned EM < {TARGET_S} s: {verdict} ({t_binned:.4f} s); "
        f"direct/binned = {t_direct_full / t_binned:.0f}×; "
        f"binned vs direct estimate half-L1 = "
        f"{0.5 * float(np.abs(est_b.probabilities - est_d.probabilities).sum()):.4f}"
    )


def semiconvergence() -> None:
    """Wu's information loss of EM / Bayes against the iteration count and the stopping rule."""
    rng = np.random.default_rng(2024)  # data only
    n = 100_000
    x = np.where(rng.random(n) < 0.4, rng.normal(0.3, 0.06, n), rng.normal(0.7, 0.08, n))
    x = np.clip(x, 0.0, 1.0)
    r = AdditiveRandomizer(noise="laplace", scale=0.1, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=7)
    four = reconstruct_fourier(w, r, 8, bins=50, taper="fejer")
    print(f"# n={n:,}, Laplace b=0.1 on [0, 1], 50 bins; Wu's information loss")
    print(f"Fourier (8 harmonics, Fejér) alone: {wu_information_loss(four, x):.3f}")
    print(f"{'iterations':>10}{'EM':>8}{'Bayes':>8}")
    for it in (10, 30, 100, 300, 1000, 3000):
        em = reconstruct_em(w, r, 50, tol=0, max_iter=it)
        bayes = reconstruct_bayes(w, r, 50, tol=0, max_iter=it)
        print(f"{it:>10}{wu_information_loss(em, x):>8.3f}{wu_information_loss(bayes, x):>8.3f}")
    print(f"{'tol':>8}{'uniform: it':>13}{'loss':>7}{'Fourier: it':>13}{'loss':>7}")
    for tol in (1e-2, 3e-3, 1e-3, 3e-4, 1e-4):
        u = reconstruct_em(w, r, 50, tol=tol, max_iter=100_000)
        f = reconstruct_em(
            w, r, 50, tol=tol, init="fourier", harmonics=8, taper="fejer", max_iter=100_000
        )
        print(
            f"{tol:>8g}{u.iterations:>13}{wu_information_loss(u, x):>7.3f}"
            f"{f.iterations:>13}{wu_information_loss(f, x):>7.3f}"
        )


if __name__ == "__main__":
    main()
