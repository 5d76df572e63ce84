"""In-memory sufficient statistics vs a bare ``X.T @ X`` (the named baseline), same run.

Usage::

    .venv/bin/python benchmarks/stats/bench_stats_memory.py [--rows N] [--cols P] [--repeat R]

Prints one table: best-of-``repeat`` seconds for the baseline (one BLAS call that computes only
``Σxxᵀ``) and for :meth:`SufficientStats.compute` without labels and with 2 classes (which also
compute ``n``, ``Σx``, class counts and the per-class sums, in one pass), and the ratio to the
baseline. Target: ratio <= 1.5 for the defaults (threads: the CPU count); the single-thread
figures are printed for information.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable

import numpy as np

from ppdp.data import SufficientStats

TARGET = 1.5


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    X = rng.random((args.rows, args.cols))
    y = (rng.random(args.rows) < 0.3).astype(np.int64)  # 2 classes, 30% / 70%

    # Warm up BLAS threads and the code paths once.
    _ = X[:1000].T @ X[:1000]
    SufficientStats.compute(X[:1000], y[:1000], n_classes=2)

    rows: list[tuple[str, float]] = []
    base = best_of(lambda: X.T @ X, args.repeat)
    rows.append(("bare X.T @ X (baseline: Σxxᵀ only)", base))
    rows.append(
        ("SufficientStats.compute(X)", best_of(lambda: SufficientStats.compute(X), args.repeat))
    )
    rows.append(
        (
            "SufficientStats.compute(X, y, n_classes=2)",
            best_of(lambda: SufficientStats.compute(X, y, n_classes=2), args.repeat),
        )
    )

    # For information: the same kernel on one thread (the target applies to the defaults).
    single = [
        (
            "  same, n_threads=1 (no labels)",
            best_of(lambda: SufficientStats.compute(X, n_threads=1), args.repeat),
        ),
        (
            "  same, n_threads=1 (2 classes)",
            best_of(lambda: SufficientStats.compute(X, y, n_classes=2, n_threads=1), args.repeat),
        ),
    ]

    # The comparison is only meaningful if the results agree.
    st = SufficientStats.compute(X, y, n_classes=2)
    ref = X.T @ X
    rel = float(np.max(np.abs(st.sum_xx - ref)) / np.max(np.abs(ref)))

    print(
        f"n={args.rows:,} p={args.cols} float64 ({X.nbytes / 1e6:,.0f} MB), best of "
        f"{args.repeat}; {os.cpu_count()} CPUs, numpy {np.__version__}, {platform.machine()}"
    )
    print(f"{'what':<46} {'seconds':>9} {'ratio':>7}")
    for name, t in rows:
        print(f"{name:<46} {t:9.4f} {t / base:7.2f}")
    for name, t in single:
        print(f"{name:<46} {t:9.4f} {t / base:7.2f}")
    worst = max(t for _, t in rows[1:]) / base
    verdict = "OK" if worst <= TARGET else "ABOVE TARGET"
    print(f"target ratio <= {TARGET}: worst {worst:.2f} -> {verdict}")
    print(f"max relative difference of Σxxᵀ vs baseline: {rel:.1e}")


if __name__ == "__main__":
    main()
