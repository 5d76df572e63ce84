"""Issue 13, NLTCS: what a faithful synthesizer can reach on each target at best.

No noise here. The training split (``train_test_split(load_nltcs(), test_size=0.2,
random_state=0)``, as in ``benchmarks/synth_vs_peers.py``) is summarised over its full
domain (16 binary items, 65,536 cells), and ``LinearSVC(C=1)`` is trained on weighted cells:

* **real rows**: each cell weighted by its count (the same classifier as on the rows);
* **max-ent k-way**: the maximum-entropy table that matches every exact k-way marginal
  (k = 2, 3; iterative proportional fitting from the uniform table), the limit of a
  marginal-based synthesizer with exact measurements (``pairs`` fits the 2-way ones);
* **positive ×f**: the real cells with the target's positive rows weighted by ``f``: a
  distortion of the class balance, which moves the hinge-loss threshold.

Each classifier is tested on the real 20 %. Prints one table (misclassification per target).

Run::

    .venv/bin/python benchmarks/synth/nltcs_limits.py      # about a minute
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
from numpy.typing import NDArray
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from ppdp.datasets import load_nltcs

TARGETS = ("getting about outside", "managing money", "traveling", "bathing")
SHIFTS = (0.9, 1.1, 1.2)


def _cells(d: int) -> NDArray[np.int64]:
    """Every cell of the binary domain, one row each (the first item is the top bit)."""
    return (np.arange(2**d)[:, None] >> np.arange(d)[::-1]) & 1


def max_entropy(counts: NDArray[np.float64], cells: NDArray[np.int64], order: int) -> NDArray:
    """The max-entropy table matching every ``order``-way marginal of ``counts`` (IPF)."""
    d = cells.shape[1]
    fitted = np.full(counts.size, counts.sum() / counts.size)
    cliques = list(itertools.combinations(range(d), order))
    weights = 1 << np.arange(order)[::-1]
    keys = [cells[:, list(c)] @ weights for c in cliques]
    margins = [np.bincount(k, weights=counts, minlength=2**order) for k in keys]
    for _ in range(60):
        for key, margin in zip(keys, margins, strict=True):
            current = np.bincount(key, weights=fitted, minlength=2**order)
            fitted *= (margin / np.maximum(current, 1e-300))[key]
    return fitted


def main() -> None:
    warnings.simplefilter("ignore")  # LinearSVC's convergence notes
    df, _ = load_nltcs()
    train, test = train_test_split(df, test_size=0.2, random_state=0)
    columns = list(df.columns)
    rows = train.to_numpy().astype(np.int64)
    d = rows.shape[1]
    cells = _cells(d)
    counts = np.bincount(rows @ (1 << np.arange(d)[::-1]), minlength=2**d).astype(float)
    held = test.to_numpy().astype(np.int64)

    def error(weights: NDArray[np.float64], target: str) -> float:
        j = columns.index(target)
        others = [i for i in range(d) if i != j]
        keep = weights > 1e-9
        clf = LinearSVC(C=1).fit(
            cells[keep][:, others], cells[keep][:, j], sample_weight=weights[keep]
        )
        return float(np.mean(clf.predict(held[:, others]) != held[:, j]))

    tables = {"real rows": counts}
    for order in (2, 3):
        tables[f"max-ent {order}-way (exact)"] = max_entropy(counts, cells, order)
    print("| training table | " + " | ".join(t.split()[-1] for t in TARGETS) + " |")
    print("|---|" + "---:|" * len(TARGETS))
    for name, weights in tables.items():
        print(f"| {name} | " + " | ".join(f"{error(weights, t):.4f}" for t in TARGETS) + " |")
    for f in SHIFTS:
        errs = []
        for t in TARGETS:
            shifted = counts * np.where(cells[:, columns.index(t)] == 1, f, 1.0)
            errs.append(f"{error(shifted, t):.4f}")
        print(f"| real, positive rows ×{f} | " + " | ".join(errs) + " |")


if __name__ == "__main__":
    main()
