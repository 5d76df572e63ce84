"""Throughput of ppdp's secure noise against numpy's textbook samplers and OpenDP.

Prints one table: samples, best-of-N seconds, samples/s, and the ratio to ppdp's secure
sampler of the same law. Rows:

* ppdp.noise.laplace / gaussian with the default source (os.urandom) on 10**7 samples,
  and with a seeded PCG64 source (not for releases; shows the cost of the OS entropy);
* numpy ``default_rng().laplace / normal`` on 10**7 samples (textbook, not safe against
  floating-point attacks: the baseline for raw speed);
* OpenDP ``make_laplace`` / ``make_gaussian`` on a vector of 10**5 floats (exact samplers),
  if ``opendp`` is importable (``benchmarks/noise/run.sh`` installs it in a peer venv).

Target (issue 2): at least 5 million samples/s on one core for ppdp's secure Laplace and
Gaussian. Run with ``benchmarks/noise/run.sh`` (pins to one core) or, from the repository
root, ``PYTHONPATH=src python benchmarks/noise/bench_noise.py``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from ppdp import noise
from ppdp.random import SecureRandom, SeededRandom

TARGET = 5_000_000


def best_time(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def opendp_rows(n: int, repeats: int) -> list[tuple[str, str, int, float | None, str]]:
    try:
        import opendp.prelude as dp
    except ImportError:
        note = "skipped: opendp not importable (benchmarks/noise/run.sh installs it in a peer venv)"
        return [
            ("opendp make_laplace", note, n, None, ""),
            ("opendp make_gaussian", note, n, None, ""),
        ]
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    lap = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=1.0)
    gau = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=1.0)
    data = [0.0] * n
    return [
        (
            "opendp make_laplace",
            "exact sampler (OpenDP)",
            n,
            best_time(lambda: lap(data), repeats),
            "laplace",
        ),
        (
            "opendp make_gaussian",
            "exact sampler (OpenDP)",
            n,
            best_time(lambda: gau(data), repeats),
            "gaussian",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--samples", type=int, default=10_000_000, help="samples for ppdp and numpy"
    )
    parser.add_argument(
        "--opendp-samples", type=int, default=100_000, help="vector length for OpenDP"
    )
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument(
        "--opendp-repeats", type=int, default=3, help="best of this many OpenDP runs"
    )
    args = parser.parse_args(argv)
    n, repeats = args.samples, args.repeats

    try:
        opendp_version = importlib.metadata.version("opendp")
    except importlib.metadata.PackageNotFoundError:
        opendp_version = "not installed"
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 0
    print("ppdp.noise throughput benchmark")
    print(f"  cpu:      {cpu_name()} (this process may run on {affinity} core(s))")
    versions = f"numpy: {np.__version__}  opendp: {opendp_version}"
    print(f"  python:   {platform.python_version()}  {versions}")
    print(f"  ppdp:     commit {git_commit()}; grid bits {noise.GRID_BITS}")
    print()

    secure, seeded = SecureRandom(), SeededRandom(20240601)
    rng = np.random.default_rng(20240601)
    rows: list[tuple[str, str, int, float | None, str]] = []
    # Warm up (imports, first allocation, lru caches) before timing.
    noise.laplace(1.0, 1000, random_state=secure)
    noise.gaussian(1.0, 1000, random_state=secure)
    for law, sampler in (("laplace", noise.laplace), ("gaussian", noise.gaussian)):
        t = best_time(lambda s=sampler: s(1.0, n, random_state=secure), repeats)
        rows.append((f"ppdp.noise.{law}", "os.urandom (default)", n, t, law))
        t = best_time(lambda s=sampler: s(1.0, n, random_state=seeded), repeats)
        rows.append((f"ppdp.noise.{law}", "seeded PCG64 (tests only)", n, t, law))
    rows.append(
        (
            "numpy laplace",
            "PCG64, textbook (unsafe)",
            n,
            best_time(lambda: rng.laplace(0.0, 1.0, n), repeats),
            "laplace",
        )
    )
    rows.append(
        (
            "numpy normal",
            "PCG64, textbook (unsafe)",
            n,
            best_time(lambda: rng.normal(0.0, 1.0, n), repeats),
            "gaussian",
        )
    )
    rows.extend(opendp_rows(args.opendp_samples, args.opendp_repeats))

    reference = {
        law: samples / t
        for name, src, samples, t, law in rows
        if src.startswith("os.urandom") and t
    }
    header = (
        f"{'sampler':<22} {'source':<28} {'samples':>11} {'seconds':>9} "
        f"{'samples/s':>13} {'ratio to ppdp':>14}"
    )
    print(header)
    print("-" * len(header))
    for name, src, samples, t, law in rows:
        if t is None:
            print(f"{name:<22} {src}")
            continue
        rate = samples / t
        ratio = f"{rate / reference[law]:.4g}x" if law in reference else ""
        print(f"{name:<22} {src:<28} {samples:>11,} {t:>9.3f} {rate:>13,.0f} {ratio:>14}")
    print()
    ok = True
    for law in ("laplace", "gaussian"):
        rate = reference[law]
        verdict = "meets" if rate >= TARGET else "MISSES"
        ok &= rate >= TARGET
        print(
            f"ppdp secure {law}: {rate / 1e6:.1f} M samples/s {verdict} "
            f"the target of {TARGET / 1e6:.0f} M/s"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
