"""Wu's one-step Fourier estimator: ppdp against a textbook implementation, in one run.

Target (issue 7): ``reconstruct_fourier`` on n = 500,000 reports with 12 harmonics in under
0.1 s. The baseline is the formula as written (C.3): for each harmonic, ``mean(sin 2πiz)``
and ``mean(cos 2πiz)`` with fresh trigonometric calls (2·m trig evaluations per report),
then the same deconvolution; ppdp uses one complex exponential per report and its powers
by multiplication, in cache-sized chunks. Both give the same coefficients (the table
shows the largest difference).

Data: the bimodal mixture of ``bench_local_em.py``, Laplace noise b = 0.05 on [0, 1]
(|φ_Y(12)| ≈ 0.066, so 12 harmonics are estimable at this n). Seeded noise (benchmark only).

Run from the repository root: ``PYTHONPATH=src python benchmarks/bench_local_fourier.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np

from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.local import AdditiveRandomizer, reconstruct_fourier

TARGET_S = 0.1


def textbook_coefficients(w: np.ndarray, r: AdditiveRandomizer, m: int) -> np.ndarray:
    lo, hi = r.domain
    z = (w - lo) / (hi - lo)
    out = np.empty((m, 2))
    for i in range(1, m + 1):
        s = np.mean(np.sin(2 * np.pi * i * z))
        c = np.mean(np.cos(2 * np.pi * i * z))
        phi = float(r.noise_characteristic(2 * np.pi * i / (hi - lo)))
        out[i - 1] = (2 * s / phi, 2 * c / phi)  # (a_i, b_i) for a real, symmetric φ_Y
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500_000)
    parser.add_argument("--harmonics", type=int, default=12)
    parser.add_argument("--bins", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore", InsecureRandomnessWarning)

    rng = np.random.default_rng(12345)  # data only
    n, m = args.n, args.harmonics
    x = np.where(rng.random(n) < 0.4, rng.normal(0.3, 0.06, n), rng.normal(0.7, 0.08, n))
    x = np.clip(x, 0.0, 1.0)
    r = AdditiveRandomizer(noise="laplace", scale=0.05, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=1)
    truth = np.histogram(x, bins=args.bins, range=(0.0, 1.0))[0] / n

    def timed(fn):
        best, out = float("inf"), None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        return best, out

    t_ppdp, est = timed(lambda: reconstruct_fourier(w, r, m, bins=args.bins))
    t_fejer, est_f = timed(lambda: reconstruct_fourier(w, r, m, bins=args.bins, taper="fejer"))
    t_text, coef = timed(lambda: textbook_coefficients(w, r, m))
    diff = max(
        float(np.max(np.abs(np.array(est.details["a"]) - coef[:, 0]))),
        float(np.max(np.abs(np.array(est.details["b"]) - coef[:, 1]))),
    )
    loss = lambda e: 0.5 * float(np.abs(e.probabilities - truth).sum())  # noqa: E731

    print(
        f"# ppdp.local Fourier benchmark — {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, numpy {np.__version__}"
    )
    print(
        f"# n={n:,} reports, {m} harmonics, {args.bins} bins, Laplace b=0.05 on [0, 1], "
        f"best of {args.repeats}"
    )
    head = f"{'method':<46}{'seconds':>10}{'vs ppdp':>10}{'half-L1 to truth':>18}"
    print(head)
    print("-" * len(head))
    print(
        f"{'ppdp reconstruct_fourier (truncation)':<46}{t_ppdp:>10.4f}{1.0:>10.2f}"
        f"{loss(est):>18.4f}"
    )
    print(
        f"{'ppdp reconstruct_fourier (Fejér taper)':<46}{t_fejer:>10.4f}"
        f"{t_fejer / t_ppdp:>10.2f}{loss(est_f):>18.4f}"
    )
    print(
        f"{'textbook coefficients only (2m trig/report)':<46}{t_text:>10.4f}"
        f"{t_text / t_ppdp:>10.2f}{'':>18}"
    )
    verdict = "PASS" if t_ppdp < TARGET_S else "MISS"
    print(
        f"\ntarget: Fourier estimator < {TARGET_S} s: {verdict} ({t_ppdp:.4f} s); "
        f"max |coefficient difference| vs textbook = {diff:.2e}"
    )


if __name__ == "__main__":
    main()
