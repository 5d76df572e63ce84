"""Does the report's verdict tell known-good releases from known-broken ones?

Two tables: 15,000 rows of Adult (the release compared with them is built from them or from
15,000 other Adult rows), and a seeded wide table of 150 columns (every fifth with 200
codes; ``wide_table.py``) of 10,000 rows. Per table, releases that are good by construction
(the original itself, an independent sample of the same population), broken by construction
(one column of the strongest pair shuffled, every column shuffled, uniform noise, the
shuffled table with a damaged column), and ppdp releases (Adult only: TableSynthesizer at
ε = 1 and 4, DP-LDA synthesis at ε = 2, LAP at ε = 1; seeded noise). Each is reported
without a target and, on Adult, with the label ``income`` as the target.

Prints a Markdown table: release, what it is, the verdict, and each part's verdict.

    PYTHONPATH=src python benchmarks/report/bench_verdict.py > benchmarks/report/verdict.md
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.data.columns import NumericColumn
from ppdp.datasets import load_adult
from ppdp.evaluate import quality_report

_spec = importlib.util.spec_from_file_location(
    "wide_table", Path(__file__).with_name("wide_table.py")
)
wide = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(wide)  # type: ignore[union-attr]


def uniform_noise(schema, n, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for col in schema.columns:
        if isinstance(col, NumericColumn):
            out[col.name] = rng.uniform(col.lower, col.upper, n)
        else:
            out[col.name] = rng.choice(np.asarray(col.categories, dtype=object), n)
    if schema.label is not None:
        out[schema.label.name] = rng.choice(np.asarray(schema.label.classes, dtype=object), n)
    return pd.DataFrame(out)[list(schema.column_names)]


def damaged(df, schema, seed=0):
    """Every column shuffled, and the first numeric column's values moved up by a quarter of
    its range (clipped): pairs worse than shuffling, no association kept."""
    out = wide.shuffled(df, seed)
    col = next(c for c in schema.columns if isinstance(c, NumericColumn))
    out[col.name] = np.clip(out[col.name] + (col.upper - col.lower) / 4, col.lower, col.upper)
    return out


def adult_cases():
    from ppdp.publish import DPLDASynthesizer, LaplacePublisher, TableSynthesizer

    df, schema = load_adult()
    perm = np.random.default_rng(0).permutation(len(df))
    a = df.iloc[perm[:15000]].reset_index(drop=True)
    b = df.iloc[perm[15000:30000]].reset_index(drop=True)
    cases = [
        ("the original itself", "good", a.copy()),
        ("15,000 other Adult rows", "good", b),
        ("relationship shuffled (strongest pair dropped)", "broken",
         wide.shuffled(a, 1, ["relationship"])),
        ("every column shuffled", "broken", wide.shuffled(a, 1)),
        ("shuffled, age moved up", "broken", damaged(a, schema)),
        ("uniform noise", "broken", uniform_noise(schema, len(a))),
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eps in (1.0, 4.0):
            data = TableSynthesizer(eps, schema, random_state=1).fit(a).release_.data
            cases.append((f"TableSynthesizer ε = {eps:g}", "DP", data))
        cases.append(
            (
                "DP-LDA synthesis ε = 2",
                "DP",
                DPLDASynthesizer(2.0, schema, random_state=1).fit(a).release_.data,
            )
        )
        cases.append(
            ("LAP ε = 1", "DP", LaplacePublisher(1.0, schema, random_state=1).fit(a).release_.data)
        )
    return a, schema, cases


def wide_cases():
    df, schema = wide.wide_table(10_000, seed=0)
    other, _ = wide.wide_table(10_000, seed=1)
    cases = [
        ("the original itself", "good", df.copy()),
        ("an independent sample", "good", other),
        ("num_000 shuffled (its pairs dropped)", "broken", wide.shuffled(df, 1, ["num_000"])),
        ("every column shuffled", "broken", wide.shuffled(df, 1)),
        ("shuffled, num_000 moved up", "broken", damaged(df, schema)),
        ("uniform noise", "broken", uniform_noise(schema, len(df))),
    ]
    return df, schema, cases


def _parts(report):
    return ", ".join(f"{p['part']} {p['verdict']}" for p in report.verdict_parts)


def main() -> None:
    print("| table | release | kind | target | verdict | parts | seconds |")
    print("|---|---|---|---|---|---|---:|")
    ok = True
    for table, (orig, schema, cases) in (("Adult", adult_cases()), ("wide 150", wide_cases())):
        targets = [None, "income"] if table == "Adult" else [None]
        for name, kind, rel in cases:
            for target in targets:
                t = time.perf_counter()
                r = quality_report(orig, rel, schema, target=target)
                dt = time.perf_counter() - t
                if kind == "good" and r.verdict != "useful":
                    ok = False
                if kind == "broken" and r.verdict == "useful":
                    ok = False
                print(
                    f"| {table} | {name} | {kind} | {target or '–'} | {r.verdict} | "
                    f"{_parts(r)} | {dt:.1f} |",
                    flush=True,
                )
    print()
    print("every good release useful and no broken one useful:", "yes" if ok else "NO")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
