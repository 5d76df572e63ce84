"""Ablation of the tree's edge forms (issue 30): which candidate forms help the 2-way TVD.

Runs only at the commit that had every form (``suite_forms.md`` names it); each variant
switches forms off by patching the model. Flags: L forms with the label axis only, N no
coarse numeric forms, M no merged categorical codes, H the honest fine-level gain at utility
sensitivity 3; "full" is every form with the optimistic form-level score. Metrics as
``suite.py`` (16 equal-width bins, add/remove, δ = 1e-9, 3 seeds)::

    PYTHONPATH=src .venv/bin/python benchmarks/synth/forms_ablation.py \\
        adult,credit,cps1988,diamonds,flights,chem97,kddcup99 1,0.3 LNM,full,L,N,LN
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / ".bench-lib")]


def main() -> None:
    import suite

    from ppdp.publish import TableSynthesizer, table_synth
    from ppdp.publish import table_synth_model as model

    warnings.simplefilter("ignore")
    forms, res, eres = model.edge_forms, model.resolutions, table_synth._edge_resolutions
    select = table_synth.select_tree

    def variant(flags: str) -> None:
        model.edge_forms, table_synth.resolutions = forms, res
        table_synth._edge_resolutions, table_synth.select_tree = eres, select
        model.HONEST = 0.0
        if "L" in flags:
            model.edge_forms = lambda *a: [f for f in forms(*a) if f.labelled or a[2] is None]
        if "N" in flags:
            table_synth.resolutions = lambda b, a: (
                res(b, a) if b.kinds[a] == "categorical" else [None]
            )
        if "H" in flags:
            model.HONEST = 1.0

            def honest(*a, **k):
                k["utility_sensitivity"] = 3.0 * k.get("utility_sensitivity", 2.0)
                return select(*a, **k)

            table_synth.select_tree = honest
        if "M" in flags:

            def unmerged(plan, a, first):
                keep = plan.bins.kinds[a] != "categorical"
                return [m for m in eres(plan, a, first) if keep or m is None]

            table_synth._edge_resolutions = unmerged

    tables, epsilons, names = (arg.split(",") for arg in sys.argv[1:4])
    for t in tables:
        train, test, schema, target, _ = suite.load_table(t)
        ev = suite.add_target(schema, target)
        cols = suite.columns_of(ev)
        sizes = [s for _, s, _ in cols]
        real = suite.binned(train, ev)
        nums = suite.numeric_values(train, schema)
        keys = list(nums)
        r = {
            (a, b): suite.pearson(nums[a], nums[b])
            for x, a in enumerate(keys)
            for b in keys[x + 1 :]
        }
        strong = [p for p, v in r.items() if abs(v) >= 0.5]
        for eps in map(float, epsilons):
            for name in names:
                variant(name)
                tvd, lost, aucs = [], [], []
                for seed in range(3):
                    synth = TableSynthesizer(
                        eps, schema, relation="add/remove", delta=1e-9, random_state=seed
                    )
                    data = synth.fit(train).release_.data
                    syn = suite.binned(data, ev)
                    tvd.append(np.mean(list(suite.tvds(real, syn, sizes)[1].values())))
                    out = suite.numeric_values(data, schema)
                    lost.append(
                        sum(abs(suite.pearson(out[a], out[b]) - r[a, b]) > 0.15 for a, b in strong)
                    )
                    if test is not None and target is not None:
                        aucs.append(suite.auc(syn, suite.binned(test, ev), sizes, len(cols) - 1))
                auc = f"{np.mean(aucs):.3f}" if aucs else "-"
                print(
                    f"{t} eps={eps} {name:5s} tvd2={np.mean(tvd):.4f} "
                    f"lost={np.mean(lost):.1f}/{len(strong)} auc={auc}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
