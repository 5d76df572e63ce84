"""How TableSynthesizer keeps a skewed numeric column: equal-width bins, declared cut points
(``cuts`` in the schema), a declared log scale (``scale: log``: equal widths of
``log1p(income)``) and ``binning="private-quantiles"``.

A lognormal income (median about 22,000) declared on ``[0, 1e6]`` with an age, a count and a
region, and a label that depends on the income. Printed: the relative error of the synthetic
10th, 50th, 90th and 99th percentiles of the income, mean and worst over the seeds, per row
count and ε. Equal widths are shown decoded both ways within a bin: uniformly, and by the
measured sub-bins (``decode="sub-bins"``, the default; the other cases use the default too).
Plain script (no timing); its output is committed as ``synth_skewed.md``::

    .venv/bin/python benchmarks/synth_skewed.py [--seeds 4] [--rows 5000,30000] [--eps 1]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.publish import TableSynthesizer

QUANTILES = (0.1, 0.5, 0.9, 0.99)
BRACKETS = [2500, 5000, 7500, 10000, 15000, 20000, 25000, 30000, 40000, 50000, 75000,
            100000, 150000, 250000]  # fmt: skip


def schema(cuts: list[float] | None, scale: str = "linear") -> Schema:
    income = {"name": "income", "type": "numeric", "lower": 0, "upper": 1_000_000}
    if cuts is not None:
        income["cuts"] = cuts
    if scale != "linear":
        income["scale"] = scale
    return Schema.from_dict(
        {
            "columns": [
                income,
                {"name": "age", "type": "numeric", "lower": 18, "upper": 100, "integer": True},
                {"name": "visits", "type": "numeric", "lower": 0, "upper": 9, "integer": True},
                {"name": "region", "type": "categorical", "categories": ["n", "s", "e", "w"]},
            ],
            "label": {"name": "y", "classes": ["a", "b"]},
        }
    )


def table(n: int, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = np.round(rng.lognormal(10.0, 0.9, n), 2)
    return pd.DataFrame(
        {
            "income": income,
            "age": rng.integers(18, 100, n),
            "visits": rng.integers(0, 10, n),
            "region": rng.choice(["n", "s", "e", "w"], n),
            "y": np.where(income > 30_000, "b", "a"),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--rows", default="5000,30000")
    parser.add_argument("--eps", default="1")
    parser.add_argument("--cases", default=None, help="comma-separated case names (all)")
    args = parser.parse_args()
    cases = {
        "equal-width, uniform in the bin": (schema(None), "equal-width", "uniform"),
        "equal-width (sub-bins, the default)": (schema(None), "equal-width", "sub-bins"),
        "declared cuts": (schema(BRACKETS), "equal-width", "sub-bins"),
        "declared log scale": (schema(None, "log"), "equal-width", "sub-bins"),
        "private-quantiles": (schema(None), "private-quantiles", "sub-bins"),
        "log scale + private-quantiles": (schema(None, "log"), "private-quantiles", "sub-bins"),
    }
    if args.cases is not None:
        cases = {k: v for k, v in cases.items() if k in args.cases.split(",")}
    print(
        "| rows | ε | binning | "
        + " | ".join(f"q{int(q * 100)} mean / worst" for q in QUANTILES)
        + " |"
    )
    print("|---:|---:|---|" + "---:|" * len(QUANTILES))
    for n in (int(x) for x in args.rows.split(",")):
        df = table(n)
        real = df.income.quantile(QUANTILES).to_numpy()
        for eps in (float(x) for x in args.eps.split(",")):
            for name, (sch, binning, decode) in cases.items():
                errors = []
                for seed in range(args.seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        synth = TableSynthesizer(
                            eps, sch, binning=binning, decode=decode, random_state=seed
                        )
                        data = synth.fit(df).release_.data
                    errors.append(np.abs(data.income.quantile(QUANTILES).to_numpy() / real - 1))
                e = np.array(errors)
                cells = " | ".join(
                    f"{m:.1%} / {w:.1%}" for m, w in zip(e.mean(0), e.max(0), strict=True)
                )
                print(f"| {n:,} | {eps:g} | {name} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
