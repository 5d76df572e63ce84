"""Release time of DP-PCA and its baselines: Adult (45,222 x 35) and 10^6 x 50 synthetic.

Usage::

    .venv/bin/python benchmarks/publish/bench_pca.py [--rows 1000000] [--cols 50] [--repeat 5]

Every timing is a whole ``fit`` (encode and validate, stage-1 sums, eigendecomposition,
projection, noise from the OS CSPRNG, reconstruction, decode to a DataFrame), the best and
the median of ``--repeat`` runs, without an accountant; the load average is printed, since
other jobs on a shared machine inflate the medians. Targets (issue 3): Adult under 1 s, 10^6 x 50
under 30 s. Named baseline in the same run: the *non-private* rank-k PCA reconstruction of
the same encoded matrix (``X.T @ X``, ``numpy.linalg.eigh``, project, rebuild), which is the
arithmetic floor DP-PCA adds noise to; LAP and EXP are the paper's baselines.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.datasets import load_adult
from ppdp.publish.baselines import ExponentialPublisher, LaplacePublisher
from ppdp.publish.pca import DPPCAPublisher


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(best, median) wall time of ``repeat`` runs: the best is robust to a busy machine."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def plain_pca(X: np.ndarray, k: int) -> np.ndarray:
    """Non-private rank-k reconstruction (the baseline)."""
    n = X.shape[0]
    mu = X.sum(axis=0) / n
    cov = X.T @ X / n - np.outer(mu, mu)
    _, v = np.linalg.eigh(cov)
    U = v[:, ::-1][:, :k]
    return (X @ U - mu @ U) @ U.T + mu


def synthetic(rows: int, cols: int, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(rows, 5))
    mix = rng.normal(size=(5, cols))
    data = 0.5 + 0.1 * (latent @ mix) / np.sqrt(5) + 0.05 * rng.normal(size=(rows, cols))
    names = [f"x{j:02d}" for j in range(cols)]
    schema = Schema.from_dict(
        {"columns": [{"name": c, "type": "numeric", "lower": 0, "upper": 1} for c in names]}
    )
    return pd.DataFrame(np.clip(data, 0, 1), columns=names), schema


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    load_start = os.getloadavg()[0]

    rows: list[tuple[str, str, tuple[float, float], str]] = []
    df, schema = load_adult()
    X, _ = schema.encode(df, include_label=True)
    for k in (5, 10):
        t = median_time(lambda k=k: DPPCAPublisher(1.0, k, schema).fit(df), args.repeat)
        rows.append(("Adult 45,222 x 35", f"DP-PCA k={k}", t, "< 1 s"))
    t = median_time(lambda: LaplacePublisher(1.0, schema).fit(df), args.repeat)
    rows.append(("Adult 45,222 x 35", "LAP", t, ""))
    t = median_time(lambda: ExponentialPublisher(1.0, schema).fit(df), args.repeat)
    rows.append(("Adult 45,222 x 35", "EXP (per-record)", t, ""))
    t = median_time(lambda: plain_pca(X, 10), args.repeat)
    rows.append(("Adult 45,222 x 35", "non-private PCA k=10 (encoded X)", t, "baseline"))

    big, big_schema = synthetic(args.rows, args.cols)
    Xb, _ = big_schema.encode(big)
    label = f"synthetic {args.rows:,} x {args.cols}"
    rep = max(1, min(args.repeat, 3))
    for k in (5, 10):
        t = median_time(lambda k=k: DPPCAPublisher(1.0, k, big_schema).fit(big), rep)
        rows.append((label, f"DP-PCA k={k}", t, "< 30 s"))
    t = median_time(lambda: LaplacePublisher(1.0, big_schema).fit(big), rep)
    rows.append((label, "LAP", t, ""))
    t = median_time(lambda: plain_pca(Xb, 10), rep)
    rows.append((label, "non-private PCA k=10 (encoded X)", t, "baseline"))

    print(
        f"# DP-PCA release benchmark ({platform.processor() or platform.machine()}, "
        f"numpy {np.__version__}, {args.repeat} runs (big: {rep}), secure noise, "
        f"load average {load_start:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print(f"| {'data':<24} | {'method':<34} | best (s) | median (s) | target |")
    print(f"|{'-' * 26}|{'-' * 36}|----------|------------|--------|")
    for data, method, (best, med), target in rows:
        print(f"| {data:<24} | {method:<34} | {best:8.3f} | {med:10.3f} | {target} |")


if __name__ == "__main__":
    main()
