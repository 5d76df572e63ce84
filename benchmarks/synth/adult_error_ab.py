"""Adult's misclassification as ``results.md`` measures it, for one ``TableSynthesizer`` variant.

The protocol of ``benchmarks/synth_vs_peers.py`` (replace-one, δ = 1e-9, 16 equal-width bins,
``LinearSVC(C=1)`` trained on the synthetic rows' one-hot codes, tested on Adult's test
split) at ε ∈ {0.1, 0.5, 1, 2}, 5 seeds, without writing ``results.csv``: a check that a
change keeps the Adult rows of ``results.md`` within one standard error.

Run (repository root)::

    PYTHONPATH=src .venv/bin/python benchmarks/synth/adult_error_ab.py --name after
    PYTHONPATH=src .venv/bin/python benchmarks/synth/adult_error_ab.py --name both \\
        --pair-tables both

prints one markdown row per ε: error (mean ± se) and the mean 2-way TVD.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import synth_vs_peers as bench
from ppdp.datasets import load_adult
from ppdp.publish import TableSynthesizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--name", default="default")
    parser.add_argument("--pair-tables", default=None)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    kw = {} if args.pair_tables is None else {"pair_tables": args.pair_tables}
    train, schema = load_adult("train")
    test, _ = load_adult("test")
    sizes = bench.sizes_of(schema)
    real, real_test = bench.binned(train, schema), bench.binned(test, schema)
    feats, label = list(schema.column_names[:-1]), schema.label.name
    for eps in (0.1, 0.5, 1.0, 2.0):
        errors, tvds = [], []
        for seed in range(args.seeds):
            synth = TableSynthesizer(eps, schema, random_state=seed, **kw)
            syn = bench.binned(synth.fit(train).release_.data, schema)
            errors.append(bench.svm_error(syn, real_test, sizes, feats, label))
            tvds.append(bench.mean_tvd(real, syn)[1])
        e = np.asarray(errors)
        se = e.std(ddof=1) / np.sqrt(len(e))
        print(f"| {args.name} | {eps:g} | {e.mean():.4f} ± {se:.4f} | {np.mean(tvds):.4f} |")


if __name__ == "__main__":
    main()
