"""How many public rows the hybrid SVM's ρ fit needs: held-out kernel error against fit time.

The fit minimises the kernel error over every pair of its public rows, so its cost grows
with their square; ``HybridRBFSVM(rho_fit_rows=5000)`` caps the rows it reads. This script
fits ρ (D = 100, γ = 0.5, 300 L-BFGS iterations, seeded start) on the first n of a pool of
encoded Adult rows and measures the mean squared kernel error on 1,500 other rows, next to
the error of the unfitted RFF draw. One run, shared machine: read the times as rough.

Run: ``.venv/bin/python benchmarks/hybrid_rho_fit_rows.py [--sizes 250,500,1000,2000,4000]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ppdp.datasets import load_adult
from ppdp.learn.rff import draw_frequencies, fit_frequencies, kernel_fit_loss, rbf_kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="250,500,1000,2000,4000")
    args = parser.parse_args()
    df, schema = load_adult()
    X = schema.without_label().encode(df.drop(columns=schema.label.name))[0]
    order = np.random.default_rng(0).permutation(len(X))
    held, pool = X[order[:1500]], X[order[1500:]]
    K = rbf_kernel(held, held, 0.5)
    start = draw_frequencies(100, X.shape[1], 0.5, 1)
    unfitted = kernel_fit_loss(start.reshape(-1), held, K, 100, with_gradient=False)
    print(f"held-out kernel error of the unfitted RFF draw: {unfitted:.3e}\n")
    print("| public rows | fit s | training error | held-out error |\n|---:|---:|---:|---:|")
    for n in (int(v) for v in args.sizes.split(",")):
        t = time.perf_counter()
        fit = fit_frequencies(pool[:n], n_components=100, gamma=0.5, rho0=start, max_iter=300)
        seconds = time.perf_counter() - t
        error = kernel_fit_loss(fit.rho.reshape(-1), held, K, 100, with_gradient=False)
        print(f"| {n:,} | {seconds:.1f} | {fit.loss:.3e} | {error:.3e} |", flush=True)


if __name__ == "__main__":
    main()
