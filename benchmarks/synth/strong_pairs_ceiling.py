"""The binning's own limit on strong numeric pairs, no privacy: how much of a pair's Pearson
correlation survives when each value is replaced by a draw within its bin, independently of
the other columns (the exact bins kept, so only the within-bin decoding differs).

* *uniform*: uniform within the value's bin (16 equal widths on the declared bounds);
* *within-bin marginal*: a real value of the same column drawn from the same bin (the
  exact within-bin marginal: what sub-bin decoding approaches).

It also says in how many of the 16 bins 99 % of a column's rows lie. Run (repository root)::

    .venv/bin/python benchmarks/synth/strong_pairs_ceiling.py --tables diamonds credit kddcup99
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite


def _bins_of(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.clip(np.floor((v - lo) / (hi - lo) * suite.BINS), 0, suite.BINS - 1).astype(int)


def ceiling(name: str) -> list[str]:
    train, _, schema, _, _ = suite.load_table(name)
    num = suite.numeric_values(train, schema)
    cols = {c.name: c for c in schema.columns if c.name in num}
    rng = np.random.default_rng(0)
    uni, emp, occupied = {}, {}, {}
    for k, v in num.items():
        c = cols[k]
        b = _bins_of(v, c.lower, c.upper)
        width = (c.upper - c.lower) / suite.BINS
        uni[k] = c.lower + (b + rng.random(len(v))) * width
        e = np.empty_like(v)
        for j in np.unique(b):
            at = np.flatnonzero(b == j)
            e[at] = v[rng.choice(at, len(at))]
        emp[k] = e
        share = np.sort(np.bincount(b, minlength=suite.BINS))[::-1].cumsum() / len(v)
        occupied[k] = int(np.searchsorted(share, 0.99) + 1)
    lines = []
    for a, b in itertools.combinations(num, 2):
        r = suite.pearson(num[a], num[b])
        if abs(r) < 0.5:
            continue
        ru, re = suite.pearson(uni[a], uni[b]), suite.pearson(emp[a], emp[b])
        lines.append(
            f"| {name} | {a} x {b} | {r:.3f} | {ru:.3f} | {re:.3f} | "
            f"{occupied[a]} / {occupied[b]} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="*", default=["diamonds", "credit", "kddcup99"])
    args = parser.parse_args()
    print(
        "| table | pair | real r | uniform in bin | within-bin marginal | bins holding 99 % |\n"
        "|---|---|---:|---:|---:|---|"
    )
    for t in args.tables:
        print("\n".join(ceiling(t)))


if __name__ == "__main__":
    main()
