"""TableSynthesizer and values at a numeric column's declared bounds.

A rate column (KDD Cup 99's ``same_srv_rate``: 77 % of the rows are exactly 1.00) or a
top-coded one (Adult's ``capital-gain`` at 99,999, ``age`` at 90) holds much of its mass
at its declared upper bound. This script measures how much of that mass a synthetic table
keeps, and the issue-13 Adult task (``LinearSVC`` misclassification on the real test
split, mean 2-way TVD of the binned columns) as ``benchmarks/synth_vs_peers.py`` measures
it, so a change to the binning can be compared with the previous code in one table.

Datasets (shipped): KDD Cup 99's 70,000-row sample, 38 columns after dropping ``service``
(70 values) and the two constant columns, with the schema ``draft_schema`` proposes
(reviewed as if its bounds were public: they are the natural bounds of rates and counts);
Adult's training split with its declared schema.

Run (the previous code from a worktree of an older commit, then this one)::

    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/synth/bound_codes.py --label before
    .venv/bin/python benchmarks/synth/bound_codes.py --label after
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import synth_vs_peers as bench
from ppdp.data import draft_schema
from ppdp.datasets import load_adult
from ppdp.publish import TableSynthesizer

KDD = Path(__file__).resolve().parents[2] / "src/ppdp/datasets/data/kddcup99"
KDD_COLUMNS = ("same_srv_rate", "dst_host_count", "dst_host_same_srv_rate", "serror_rate")
ADULT_COLUMNS = ("age", "capital-gain", "hours-per-week")


def at_bounds(real: pd.DataFrame, synth: pd.DataFrame, schema, columns) -> list[str]:
    """``column: real share → synthetic share`` of rows at the lower and upper bound."""
    out = []
    for name in columns:
        col = next(c for c in schema.columns if c.name == name)
        r_hi, s_hi = (real[name] >= col.upper).mean(), (synth[name] >= col.upper).mean()
        r_lo, s_lo = (real[name] <= col.lower).mean(), (synth[name] <= col.lower).mean()
        out.append(f"{name}: upper {r_hi:.3f}→{s_hi:.3f}, lower {r_lo:.3f}→{s_lo:.3f}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="this code")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    kdd = pd.read_csv(KDD / "kddcup99_10pct_sample70k.csv.gz")
    kdd = kdd.drop(columns=["service", "num_outbound_cmds", "is_host_login"])
    kdd_schema = draft_schema(kdd, label="label").reviewed()
    synth = TableSynthesizer(1.0, kdd_schema, random_state=0).fit(kdd).release_.data
    print(f"## {args.label}: KDD Cup 99 sample, ε = 1, seed 0 (share at bound: real→synthetic)")
    print(*at_bounds(kdd, synth, kdd_schema, KDD_COLUMNS), sep="\n")

    train, schema = load_adult("train")
    test, _ = load_adult("test")
    sizes = bench.sizes_of(schema)
    real, real_test = bench.binned(train, schema), bench.binned(test, schema)
    feats, label = list(schema.column_names[:-1]), schema.label.name
    synth = TableSynthesizer(1.0, schema, random_state=0).fit(train).release_.data
    print(f"\n## {args.label}: Adult, ε = 1, seed 0 (share at bound: real→synthetic)")
    print(*at_bounds(train, synth, schema, ADULT_COLUMNS), sep="\n")
    print(f"\n## {args.label}: Adult task, {args.seeds} seeds (mean ± standard error)")
    print("| ε | misclassification | 2-way TVD |\n|---:|---:|---:|")
    for eps in (0.5, 1.0, 2.0):
        errors, tvds = [], []
        for seed in range(args.seeds):
            data = TableSynthesizer(eps, schema, random_state=seed).fit(train).release_.data
            syn = bench.binned(data, schema)
            errors.append(bench.svm_error(syn, real_test, sizes, feats, label))
            tvds.append(bench.mean_tvd(real, syn)[1])
        se = np.std(errors, ddof=1) / np.sqrt(len(errors))
        print(f"| {eps} | {np.mean(errors):.4f} ± {se:.4f} | {np.mean(tvds):.4f} |")


if __name__ == "__main__":
    main()
