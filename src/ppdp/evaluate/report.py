"""A quality report of a released table, for the custodian: :func:`quality_report`.

The report compares a release (DP-PCA, DP-LDA synthetic data, the Laplace and exponential
baselines, any table with the schema's columns) with the private table it came from:

* a verdict line ("useful", "weak", "no better than the trivial baseline") with the numbers
  behind it: for a table, the worst of its parts' (marginals, pairs of columns against the
  shuffled baseline, strong associations kept, and the target); see :data:`THRESHOLDS`;
* the release's guarantee in words (from its ``.guarantee.json`` sidecar);
* per column: real and released marginals overlaid, the total-variation distance, and the
  share of values at each declared bound;
* every pair of columns (:mod:`ppdp.evaluate.pairs`): the 10 whose joint distribution moved
  most, by name, with their real and released joint shares;
* pairwise association: Pearson correlation of the encoded columns (a ``scale: log``
  column on its log scale), real, released and their difference;
* machine-learning utility when a target is given: logistic regression trained on the
  release and tested on held-out original rows, beside the same model trained on the
  original rows and the majority class.

The report reads the private data: it is for the custodian only, is not itself
differentially private, and costs no budget. The numbers need numpy and pandas (and
scikit-learn for the ML utility, the ``learn`` extra); the HTML figures need matplotlib
(the ``plots`` extra).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.budget import Guarantee
from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn, NumericColumn
from ppdp.data.dates import day_text
from ppdp.data.names import near_names
from ppdp.evaluate import pairs as pairs_mod
from ppdp.evaluate._report_common import (
    BANNER,  # noqa: F401 (re-exported: it was defined here)
    N_BINS,
    THRESHOLDS,
    VERDICTS,
    _codes,
    _numeric,
    _two,
    histogram_edges,
    import_matplotlib,
)
from ppdp.evaluate.classification import roc_auc
from ppdp.evaluate.pairs import pair_summary, pair_view
from ppdp.exceptions import (
    DataValidationError,
    ParameterError,
    ParameterTypeError,
)

__all__ = [
    "NOT_JUDGED",
    "THRESHOLDS",
    "UNDECLARED_LIMITS",
    "VERDICTS",
    "QualityReport",
    "histogram_edges",
    "import_matplotlib",
    "lda_projection_report",
    "model_report",
    "quality_report",
]

#: What a table report says instead of a verdict when a categorical column of either table
#: holds more undeclared values than :data:`UNDECLARED_LIMITS` allows: a table read with
#: the wrong encoding or separator, or a schema that is not the release's.
NOT_JUDGED = "not judged"
#: The share of a categorical column's values that may be undeclared before the report
#: gives no verdict: a ppdp release holds declared values only; an original may hold some
#: undeclared values that a release imputed or dropped.
UNDECLARED_LIMITS: dict[str, float] = {"release": 0.01, "original": 0.20}

#: Rows of each table the classifiers and the association maps use at most (a seeded sample
#: beyond that, stated in the report); the marginals and bound shares use every row.
MAX_ROWS = 100_000
#: Share of the original table held out for testing when no holdout is given.
TEST_SHARE = 0.3
_SEED = 0
_UNDECLARED = "(undeclared)"


# ---------------------------------------------------------------------------- columns
def _schema_columns(schema: Schema) -> list[NumericColumn | CategoricalColumn]:
    """Feature columns and the label (as a categorical column) in schema order."""
    cols: list[NumericColumn | CategoricalColumn] = list(schema.columns)  # type: ignore[arg-type]
    if schema.label is not None:
        cols.append(CategoricalColumn(schema.label.name, tuple(schema.label.classes)))
    return cols


def _check_table(name: str, df: Any, schema: Schema, *, exact: bool) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise ParameterTypeError(f"{name} ({type(df).__name__}) must be a pandas DataFrame")
    if len(df) == 0:
        raise DataValidationError(f"{name} has no rows")
    want = list(schema.column_names)
    have = [str(c) for c in df.columns]
    missing = [c for c in want if c not in have]
    extra = [c for c in have if c not in want and c != unit_column(schema)]
    if missing or (exact and extra):
        parts = []
        if missing:
            parts.append("lacks " + ", ".join(map(repr, missing)))
        if exact and extra:
            parts.append("has undeclared " + ", ".join(map(repr, extra)))
        raise DataValidationError(
            f"the {name}'s columns do not match the schema: it {' and '.join(parts)}"
        )
    out = df.copy()
    out.columns = have
    return mask_missing(out[want], schema)


def unit_column(schema: Schema) -> str | None:
    """The privacy unit's column, which a release of synthetic persons holds (their
    synthetic ids, ``P000001``...): allowed beside the schema's columns, never compared."""
    unit = getattr(schema, "privacy_unit", None)
    return None if unit is None else str(unit.column)


def mask_missing(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """``df`` with the schema's missing-value tokens (``missing_values``, e.g. ``'?'``) as
    missing values (NaN), which the report leaves out of every share, as the library reads
    them."""
    tokens = list(schema.missing_values)
    if not tokens:
        return df
    return df.mask(df.isin(tokens) | df.astype(str).isin([str(t) for t in tokens]))


def _uniform(col: NumericColumn | CategoricalColumn) -> NDArray[np.float64]:
    """Shares of the trivial release: values uniform within the bounds (on the column's
    scale) or the categories."""
    if isinstance(col, NumericColumn) and col.cuts is not None:
        return np.diff(col.to_unit(histogram_edges(col)))
    n = N_BINS if isinstance(col, NumericColumn) else len(col.categories)
    return np.full(n, 1.0 / n)


def _tv(p: NDArray[np.float64], q: NDArray[np.float64]) -> float:
    n = max(p.size, q.size)
    a = np.zeros(n)
    b = np.zeros(n)
    a[: p.size] = p
    b[: q.size] = q
    return float(0.5 * np.abs(a - b).sum())


# ---------------------------------------------------------------------------- encoding
def _encode(
    df: pd.DataFrame,
    cols: list[NumericColumn | CategoricalColumn],
    name: str,
    keep: dict[str, list[str]] | None = None,
) -> tuple[NDArray[np.float64], list[str]]:
    """Numeric columns scaled to [0, 1] by their bounds (clipped, on the column's scale:
    :meth:`NumericColumn.to_unit`), categories one-hot (only the categories ``keep`` names
    for a column it names)."""
    blocks: list[NDArray[np.float64]] = []
    names: list[str] = []
    for col in cols:
        if isinstance(col, NumericColumn):
            v = _numeric(name, col, df[col.name])
            blocks.append(np.nan_to_num(col.to_unit(v), nan=0.5)[:, None])
            names.append(col.name)
        else:
            cats = [str(c) for c in col.categories]
            if keep is not None and col.name in keep:
                cats = keep[col.name]
            codes = _codes(df[col.name], cats)
            onehot = np.zeros((len(df), len(cats)))
            ok = codes >= 0
            onehot[np.flatnonzero(ok), codes[ok]] = 1.0
            blocks.append(onehot)
            names.extend(f"{col.name}={c}" for c in cats)
    return np.hstack(blocks), names


def _corr(X: NDArray[np.float64]) -> NDArray[np.float64]:
    sd = X.std(axis=0)
    Z = np.zeros_like(X)
    live = sd > 1e-12
    Z[:, live] = (X[:, live] - X[:, live].mean(axis=0)) / sd[live]
    C = (Z.T @ Z) / max(len(X), 1)
    np.fill_diagonal(C, np.where(live, 1.0, 0.0))
    return np.clip(C, -1.0, 1.0)


def _cramers_v(df: pd.DataFrame, cats: list[CategoricalColumn]) -> NDArray[np.float64]:
    """Cramér's V of every pair of categorical columns (declared categories only).

    ``V = sqrt(χ² / (n · (min(r, c) − 1)))`` over the contingency table of the pair, where r
    and c count the categories that occur; 0 when either column has a single category. The
    diagonal is 1 for a column with two or more categories, else 0.
    """
    k = len(cats)
    V = np.zeros((k, k))
    if k == 0:
        return V
    width = max(len(c.categories) for c in cats)
    codes = np.column_stack(
        [_codes(df[col.name], [str(c) for c in col.categories]) for col in cats]
    )
    codes = np.asfortranarray(np.where(codes < 0, width, codes).astype(np.int64))
    for i in range(k):
        a = codes[:, i]
        V[i, i] = 1.0 if np.unique(a[a < width]).size > 1 else 0.0
        if i + 1 < k:
            V[i, i + 1 :] = _plain_v(pairs_mod.pair_tables(codes, i, width))
            V[i + 1 :, i] = V[i, i + 1 :]
    return V


def _plain_v(t: NDArray[np.int64]) -> NDArray[np.float64]:
    """Cramér's V (no bias correction) of contingency tables, shape (m, r, c)."""
    t = t.astype(np.float64)
    n = t.sum(axis=(1, 2))
    rows, cols = t.sum(axis=2), t.sum(axis=1)
    m = np.minimum((rows > 0).sum(axis=1), (cols > 0).sum(axis=1)) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
        chi2 = np.where(expected > 0, (t - expected) ** 2 / expected, 0.0).sum(axis=(1, 2))
        v = np.sqrt(chi2 / (n * m))
    return np.where((m >= 1) & (n > 0), np.minimum(v, 1.0), 0.0)


# ---------------------------------------------------------------------------- ML utility
#: The classifiers of the ML utility, by key: the verdict rests on the first.
MODELS: dict[str, str] = {
    "logreg": "logistic regression",
    "hgb": "gradient-boosted trees",
}
#: Points of a stored ROC curve (the false-positive rates are a fixed grid).
ROC_POINTS = 101


def _sample(n: int, rng: np.random.Generator, cap: int | None = None) -> NDArray[np.int64]:
    cap = MAX_ROWS if cap is None else cap
    if n <= cap:
        return np.arange(n)
    return np.sort(rng.choice(n, cap, replace=False))


def _one_thread() -> Any:
    """Run the report's numerical work (BLAS, OpenMP) on one thread.

    The gradient-boosted trees' OpenMP threads and the correlation's BLAS threads ran five to
    seven times slower than one thread on a machine whose cores were busy with other work;
    the results do not depend on it.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # comes with scikit-learn; without it, the libraries' defaults
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


def _model(kind: str, categorical: NDArray[np.bool_] | None = None) -> Any:
    from ppdp.evaluate._optional import import_sklearn

    import_sklearn()
    if kind == "logreg":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=500)
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        random_state=_SEED, categorical_features=categorical if categorical is not None else None
    )


#: Most categories the trees take as one native categorical feature (scikit-learn's bins).
_MAX_TREE_CATEGORIES = 250


def _encode_trees(
    df: pd.DataFrame, cols: list[NumericColumn | CategoricalColumn], name: str
) -> tuple[NDArray[np.float64], NDArray[np.bool_]] | None:
    """One feature per column for the trees: numeric scaled to [0, 1], categories as codes.

    Undeclared categories become missing values. None when a column has more categories
    than the trees take natively (the one-hot encoding is used then).
    """
    blocks: list[NDArray[np.float64]] = []
    mask: list[bool] = []
    for col in cols:
        if isinstance(col, NumericColumn):
            v = _numeric(name, col, df[col.name])
            blocks.append(col.to_unit(v))
            mask.append(False)
        else:
            if len(col.categories) > _MAX_TREE_CATEGORIES:
                return None
            cats = [str(c) for c in col.categories]
            codes = _codes(df[col.name], cats)
            blocks.append(np.where(codes >= 0, codes, np.nan).astype(np.float64))
            mask.append(True)
    return np.column_stack(blocks), np.asarray(mask)


def roc_curve_points(
    y_pos: NDArray[np.bool_], scores: NDArray[np.float64], n: int = ROC_POINTS
) -> dict[str, list[float]]:
    """The ROC curve from (0, 0) and then at ``n`` evenly spaced false-positive rates.

    At each rate the true-positive rate is the curve's highest there (a tie of scores is a
    straight segment).
    """
    y = np.asarray(y_pos, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]
    tps = np.cumsum(y)[last]
    fps = np.cumsum(~y)[last]
    n_pos, n_neg = max(int(y.sum()), 1), max(int((~y).sum()), 1)
    fpr = np.r_[0.0, fps / n_neg]
    tpr = np.r_[0.0, tps / n_pos]
    grid = np.linspace(0.0, 1.0, n)
    at = np.interp(grid, fpr, tpr)
    return {"fpr": [0.0, *grid.round(4).tolist()], "tpr": [0.0, *at.round(4).tolist()]}


def _score(
    y_te: NDArray[np.int64], proba: NDArray[np.float64], pred: NDArray[np.int64], n_classes: int
) -> dict[str, Any]:
    aucs = [
        roc_auc(y_te == k, proba[:, k])
        for k in (range(1, 2) if n_classes == 2 else range(n_classes))
        if 0 < int((y_te == k).sum()) < y_te.size
    ]
    out: dict[str, Any] = {
        "accuracy": float(np.mean(pred == y_te)),
        "auc": float(np.mean(aucs)) if aucs else float("nan"),
    }
    if n_classes == 2 and aucs:
        out["roc"] = roc_curve_points(y_te == 1, proba[:, 1])
    return out


def _fit_score(
    X_tr: NDArray[np.float64],
    y_tr: NDArray[np.int64],
    X_te: NDArray[np.float64],
    y_te: NDArray[np.int64],
    n_classes: int,
    kind: str = "logreg",
    categorical: NDArray[np.bool_] | None = None,
) -> dict[str, Any]:
    present = np.unique(y_tr)
    if present.size < 2:
        acc = float(np.mean(y_te == present[0])) if present.size else 0.0
        return {"accuracy": acc, "auc": 0.5}
    model = _model(kind, categorical)
    with _one_thread():
        model.fit(X_tr, y_tr)
        proba = np.zeros((len(X_te), n_classes))
        proba[:, model.classes_] = model.predict_proba(X_te)
        pred = np.asarray(model.predict(X_te))
    return _score(y_te, proba, pred, n_classes)


def _both_models(
    tr: tuple[NDArray[np.float64], Any, NDArray[np.int64]],
    te: tuple[NDArray[np.float64], Any, NDArray[np.int64]],
    n_classes: int,
) -> dict[str, dict[str, Any]]:
    """Logistic regression on the one-hot encoding; the trees on one feature per column
    (categories native) when every column allows it, else on the one-hot encoding too."""
    (X_tr, T_tr, y_tr), (X_te, T_te, y_te) = tr, te
    out = {"logreg": _fit_score(X_tr, y_tr, X_te, y_te, n_classes, "logreg")}
    if T_tr is not None and T_te is not None:
        out["hgb"] = _fit_score(T_tr[0], y_tr, T_te[0], y_te, n_classes, "hgb", T_tr[1])
    else:
        out["hgb"] = _fit_score(X_tr, y_tr, X_te, y_te, n_classes, "hgb")
    return out


def _chance_auc_se(y_test: NDArray[np.int64], k: int) -> float:
    """Standard error of a test AUC under chance (Hanley & McNeil 1982, AUC = 0.5).

    For ``k > 2`` classes (one-vs-rest AUCs averaged) the largest per-class value, an upper
    bound on the average's. 0 when a class is missing (no AUC is computed then anyway).
    """
    ses = []
    for c in range(1 if k == 2 else 0, k):
        n1 = int(np.sum(y_test == c))
        n0 = int(y_test.size - n1)
        if n1 == 0 or n0 == 0:
            continue
        ses.append(math.sqrt((n0 + n1 + 1) / (12.0 * n0 * n1)))
    return max(ses, default=0.0)


def _lift(
    rel: dict[str, Any], real: dict[str, Any], y_test: NDArray[np.int64], k: int
) -> float | None:
    """The share of the real data's AUC gain over chance that ``rel`` keeps; None when the
    real data's own gain is within ``chance_auc_z`` standard errors of chance (then the ratio
    is noise over noise and no classifier can judge the release)."""
    gain = real["auc"] - 0.5
    floor = max(1e-9, THRESHOLDS["chance_auc_z"] * _chance_auc_se(y_test, k))
    return (rel["auc"] - 0.5) / gain if gain > floor and math.isfinite(rel["auc"]) else None


def _test_split(
    original: pd.DataFrame, holdout: pd.DataFrame | None, rng: np.random.Generator
) -> tuple[pd.DataFrame, pd.DataFrame, str, NDArray[np.int64] | None]:
    """(test rows, training rows, what the test rows are, positions of the training rows)."""
    if holdout is None:
        order = rng.permutation(len(original))
        n_test = max(1, round(TEST_SHARE * len(original)))
        note = (
            f"a random {TEST_SHARE:.0%} of the original rows ({n_test:,}); the release was made "
            "from every original row, test rows included, so its score is optimistic: give a "
            "holdout that took no part in the release for an honest number"
        )
        train_pos = np.sort(order[n_test:])
        return original.iloc[order[:n_test]], original.iloc[train_pos], note, train_pos
    return holdout, original, f"the holdout ({len(holdout):,} rows)", None


def _cap_test(df: pd.DataFrame, rng: np.random.Generator) -> tuple[pd.DataFrame, str]:
    if len(df) <= MAX_ROWS:
        return df, ""
    return df.iloc[_sample(len(df), rng)], f", a seeded sample of {MAX_ROWS:,} of them"


def _ml_utility(
    original: pd.DataFrame,
    release: pd.DataFrame,
    holdout: pd.DataFrame | None,
    cols: list[NumericColumn | CategoricalColumn],
    target: CategoricalColumn,
) -> dict[str, Any]:
    rng = np.random.default_rng(_SEED)
    features = [c for c in cols if c.name != target.name]
    classes = [str(c) for c in target.categories]

    def xy(df: pd.DataFrame, name: str) -> tuple[NDArray[np.float64], Any, NDArray[np.int64]]:
        codes = _codes(df[target.name], classes)
        keep = codes >= 0
        X, _ = _encode(df.loc[keep], features, name)
        return X, _encode_trees(df.loc[keep], features, name), codes[keep].astype(np.int64)

    test_df, train_df, test_note, _ = _test_split(original, holdout, rng)
    test_df, capped = _cap_test(test_df, rng)
    te = xy(test_df, "holdout" if holdout is not None else "original")
    y_te = te[2]
    if y_te.size == 0:
        raise DataValidationError(f"the test rows hold none of the classes of {target.name!r}")
    k = len(classes)
    n_rel = len(release)
    train_df = train_df.iloc[_sample(len(train_df), rng)]
    release = release.iloc[_sample(len(release), rng)]
    tr_real = xy(train_df, "original")
    tr_rel = xy(release, "release")
    y_real, y_rel = tr_real[2], tr_rel[2]
    real = _both_models(tr_real, te, k)
    rel = _both_models(tr_rel, te, k)
    counts = np.bincount(y_real, minlength=k)
    majority = int(np.argmax(counts))
    base = {"accuracy": float(np.mean(y_te == majority)), "auc": 0.5}
    return {
        "target": target.name,
        "model": "logistic regression (scikit-learn, default settings)",
        "models": {
            MODELS[kind]: {
                "release": rel[kind],
                "real": real[kind],
                "lift": _lift(rel[kind], real[kind], y_te, k),
            }
            for kind in MODELS
        },
        "test": test_note + capped,
        "n_test": int(y_te.size),
        "release": rel["logreg"],
        "real": real["logreg"],
        "majority": {**base, "class": classes[majority]},
        "lift": _lift(rel["logreg"], real["logreg"], y_te, k),
        "dropped_release_rows": int(len(release) - y_rel.size),
        "n_train_release": int(y_rel.size),
        "n_train_real": int(y_real.size),
        "sampled": n_rel > MAX_ROWS or len(original) > MAX_ROWS,
    }


# ---------------------------------------------------------------------------- verdict
def _verdict_ml(ml: dict[str, Any]) -> tuple[str, str]:
    t = THRESHOLDS
    rel, real, maj, lift = ml["release"], ml["real"], ml["majority"], ml["lift"]
    subject = ml.get("subject", "trained on the release")
    numbers = (
        f"{subject}: accuracy {rel['accuracy']:.3f}, AUC {rel['auc']:.3f}; "
        f"trained on the real data: accuracy {real['accuracy']:.3f}, AUC {real['auc']:.3f}; "
        f"majority class: accuracy {maj['accuracy']:.3f}, AUC 0.5"
    )
    if lift is None:
        return "weak", (
            f"the real data do not predict {ml['target']!r} better than chance, so the "
            f"classifier cannot judge the release ({numbers})"
        )
    who = "the model" if "model" in subject else "the release"
    numbers += f"; {who} keeps {lift:.0%} of the real data's AUC gain over chance"
    below_majority = rel["accuracy"] < maj["accuracy"] - t["trivial_accuracy_gap"]
    if lift < t["trivial_lift"] or (below_majority and lift < t["low_accuracy_lift"]):
        return VERDICTS[2], numbers
    if lift >= t["useful_lift"] and rel["accuracy"] >= maj["accuracy"]:
        return VERDICTS[0], numbers
    return VERDICTS[1], numbers


def _verdict_tv(columns: list[dict[str, Any]]) -> tuple[str, str]:
    """The marginals' part of a table's verdict (see :data:`THRESHOLDS`)."""
    t = THRESHOLDS
    tv = float(np.mean([c["tv"] for c in columns]))
    base = float(np.mean([c["tv_uniform"] for c in columns]))
    numbers = (
        f"mean total-variation distance of the column marginals {tv:.3f}; "
        f"of the trivial release (uniform within the declared bounds) {base:.3f}"
    )
    if tv <= t["useful_tv"]:
        return VERDICTS[0], numbers
    if tv >= t["trivial_tv_share"] * base:
        return VERDICTS[2], numbers
    return VERDICTS[1], numbers


def _verdict_pairs(ps: dict[str, Any]) -> tuple[str, str]:
    """The pairs' part of a table's verdict: 2-way TV against the shuffled and the trivial
    releases."""
    t = THRESHOLDS
    tv, shuf, uni = ps["mean_tv"], ps["mean_tv_shuffled"], ps["mean_tv_uniform"]
    numbers = (
        f"mean total-variation distance of the {ps['n_pairs']:,} column pairs {tv:.3f}; "
        f"of the real columns shuffled independently {shuf:.3f}; of the trivial release {uni:.3f}"
    )
    if tv >= t["trivial_tv_share"] * uni:
        return VERDICTS[2], numbers
    if ps["max_association"] >= t["dependence_floor"] and tv >= t["shuffled_tv_share"] * shuf:
        return VERDICTS[1], (
            f"{numbers}: the release's pairs are no closer to the real ones than the real "
            "columns drawn independently"
        )
    kept = _kept_dependence(ps)
    if kept is None:
        return VERDICTS[0], numbers
    share, text = kept
    if share < t["kept_dependence"]:
        return VERDICTS[1], f"{numbers}; {text}: too little of the real pairs' dependence"
    return VERDICTS[0], f"{numbers}; {text}"


def _kept_dependence(ps: dict[str, Any]) -> tuple[float, str] | None:
    """The share of the real dependence the release keeps over the dependent pairs (the
    shuffled baseline keeps 0, a resample of the real rows at its size 1), and its line;
    None without such pairs or when the resample is no closer than the shuffled baseline."""
    n = ps.get("n_dependent", 0)
    if not n:
        return None
    tv, shuf, res = ps["dependent_tv"], ps["dependent_tv_shuffled"], ps["dependent_tv_resampled"]
    if shuf <= res:
        return None
    share = (shuf - tv) / (shuf - res)
    kept = f"{share:.0%}" if share > 0 else "none"
    return share, (
        f"on the {n:,} pair(s) whose real association reaches "
        f"{THRESHOLDS['dependence_floor']:g}: {tv:.3f}, shuffled {shuf:.3f}, the real rows "
        f"resampled at the release's size {res:.3f}: the release keeps {kept} of their "
        "dependence"
    )


def _pair_text(d: dict[str, Any]) -> str:
    a, b = d["columns"]
    return f"{a} × {b}, {d['measure']} {_two(d['original'])} → {_two(d['release'])}"


def _verdict_associations(ps: dict[str, Any]) -> tuple[str, str]:
    """The associations' part of a table's verdict: are the strong real pairs kept?"""
    t = THRESHOLDS
    strong = ps["strong"]
    if not strong:
        return VERDICTS[0], (
            f"no pair of columns has a real association of {t['strong_association']:g} or more"
        )
    lost = [d for d in strong if d["lost"]]
    if len(lost) == len(strong):
        return VERDICTS[2], (
            f"the release keeps none of the {len(strong)} strong associations "
            f"(e.g. {_pair_text(lost[0])})"
        )
    if lost:
        shown = "; ".join(_pair_text(d) for d in lost[:3])
        more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
        return VERDICTS[1], (
            f"the release loses {len(lost)} of the {len(strong)} strong associations "
            f"({shown}{more})"
        )
    return VERDICTS[0], (
        f"the release keeps the {len(strong)} strong association(s) (the least kept: "
        f"{_pair_text(strong[0])})"
    )


def _verdict_table(
    columns: list[dict[str, Any]], ps: dict[str, Any], ml: dict[str, Any] | None
) -> tuple[str, str, list[dict[str, str]]]:
    """A table's verdict: the worst of its parts' (:data:`THRESHOLDS`), the line behind it
    (the deciding parts first) and every part's verdict and numbers."""
    parts: list[dict[str, str]] = []

    def add(part: str, judged: tuple[str, str]) -> None:
        parts.append({"part": part, "verdict": judged[0], "basis": judged[1]})

    add("marginals", _verdict_tv(columns))
    if ps["n_pairs"]:
        add("pairs", _verdict_pairs(ps))
        add("associations", _verdict_associations(ps))
    unjudged = None
    if ml is not None:
        target = f"target {ml['target']!r}"
        if ml["lift"] is None:  # nothing to keep: the other parts judge the release
            unjudged = {"part": target, "verdict": "not judged", "basis": _verdict_ml(ml)[1]}
        else:
            add(target, _verdict_ml(ml))
    worst = max(VERDICTS.index(p["verdict"]) for p in parts)
    ordered = sorted(parts, key=lambda p: -VERDICTS.index(p["verdict"]))
    if unjudged is not None:
        ordered.append(unjudged)
        parts.append(unjudged)
    basis = "; ".join(f"{p['part']}: {p['verdict']} ({p['basis']})" for p in ordered)
    return VERDICTS[worst], basis, parts


def missing_note(
    cols: list[NumericColumn | CategoricalColumn],
    counts: dict[str, NDArray[np.int64]],
    n_rows: int,
) -> str | None:
    """The original's missing values per column (left out of its shares), or None."""
    if n_rows < 1:
        return None
    shares = []
    for col in cols:
        c = counts[col.name]
        if isinstance(col, NumericColumn):
            k = n_rows - int(c[histogram_edges(col).size + 1])  # rows minus finite values
        else:
            k = int(c[-1])
        if k:
            shares.append(f"{col.name!r} {k / n_rows:.1%}")
    if not shares:
        return None
    return (
        f"the original has missing values, left out of its shares: {', '.join(shares)}; a "
        "release made under nan_policy 'impute' shows each column's impute constant in their "
        "place, which its shares count"
    )


def crowded_notes(
    cols: list[NumericColumn | CategoricalColumn], counts: dict[str, NDArray[np.int64]]
) -> list[str]:
    """A note per numeric column whose original values crowd into its first or last
    histogram bin, strictly inside the bounds (half of them or more): its histogram and TV
    distance then say little."""
    notes = []
    for col in cols:
        if not isinstance(col, NumericColumn) or col.cuts is not None:
            continue
        bins = histogram_edges(col).size - 1
        c = counts[col.name]
        hist, at_lower, at_upper = c[:bins], int(c[bins]), int(c[bins + 1])
        total = int(hist.sum())
        if total < 1:
            continue
        # values at a bound are a spike of their own (a zero-heavy column's zeros), shown
        # as the share at the bound: they do not make the histogram say little
        first, last = (hist[0] - at_lower) / total, (hist[-1] - at_upper) / total
        if max(first, last) < 0.5:
            continue
        end = "first" if first >= last else "last"
        fix = (
            "'scale: log' or public cut points ('cuts')"
            if end == "first" and col.scale == "linear"
            else "public cut points ('cuts')"
        )
        notes.append(
            f"column {col.name!r}: {max(first, last):.0%} of the original's values fall in the "
            f"{end} of its {bins} histogram bins, so its histogram and TV distance say little "
            f"about how they spread; declare {fix} in the schema to compare them in detail"
        )
    return notes


def undeclared_alarm(
    cols: list[NumericColumn | CategoricalColumn],
    counts: tuple[dict[str, NDArray[np.int64]], dict[str, NDArray[np.int64]]],
) -> str | None:
    """Why the report gives no verdict (the worst column's undeclared share), or None."""
    worst: tuple[float, str, str] | None = None
    for name, table in zip(("original", "release"), counts, strict=True):
        for col in cols:
            if not isinstance(col, CategoricalColumn):
                continue
            c = table[col.name][:-1]  # present values: declared, then undeclared
            total = int(c.sum())
            share = float(c[-1] / total) if total else 0.0
            if share > UNDECLARED_LIMITS[name] and (worst is None or share > worst[0]):
                worst = (share, name, col.name)
    if worst is None:
        return None
    share, name, column = worst
    flags = "--encoding, --sep or --decimal" if name == "original" else "the release file"
    return (
        f"{share:.0%} of the {name}'s values in column {column!r} are not declared in the "
        f"schema: the {name} was probably read with the wrong encoding or separator, or the "
        f"schema is not the release's; check {flags} and the schema (the numbers below "
        "are not reliable)"
    )


# ---------------------------------------------------------------------------- report
@dataclass
class QualityReport:
    """What :func:`quality_report` measured; render with :meth:`to_html` or :meth:`to_json`."""

    verdict: str
    verdict_basis: str
    n_original: int
    n_release: int
    columns: list[dict[str, Any]]
    feature_names: list[str]
    corr_original: NDArray[np.float64]
    corr_release: NDArray[np.float64]
    ml: dict[str, Any] | None
    guarantee: Guarantee | None
    release_info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    kind: str = "table"
    categorical_names: list[str] = field(default_factory=list)
    cramers_original: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    cramers_release: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    lda: dict[str, Any] | None = None
    verdict_parts: list[dict[str, str]] = field(default_factory=list)
    pairs: dict[str, Any] | None = None
    corr_live: NDArray[np.bool_] | None = None
    #: Under a privacy unit: the share of the original's rows the release's ``max_rows``
    #: dropped (:func:`ppdp.data.contribution.dropped_share`; custodian only).
    bounding: dict[str, Any] | None = None
    #: A group-by release's figures (:func:`ppdp.evaluate.group_report.group_report`): each
    #: released statistic's errors against the true values, and the keys' counts.
    groups: dict[str, Any] | None = None

    def _corr_diff(self) -> NDArray[np.float64]:
        """|released − real| correlation over the pairs of features that vary in both tables
        (a category that no row of one table holds has no correlation: its 0 against a real
        value would be an artefact), the diagonal left out; NaN elsewhere."""
        d = np.abs(self.corr_original - self.corr_release)
        n = d.shape[0]
        if n == 0:
            return d
        live = np.ones(n, dtype=bool) if self.corr_live is None else self.corr_live
        keep = np.outer(live, live) & ~np.eye(n, dtype=bool)
        return np.where(keep, d, np.nan)

    @property
    def corr_max_abs_diff(self) -> float:
        """The largest |released − real| correlation of two features that vary in both."""
        d = self._corr_diff()
        return float(np.nanmax(d)) if np.isfinite(d).any() else 0.0

    @property
    def corr_mean_abs_diff(self) -> float:
        """The mean |released − real| correlation of two features that vary in both."""
        d = self._corr_diff()
        return float(np.nanmean(d)) if np.isfinite(d).any() else 0.0

    @property
    def corr_largest(self) -> dict[str, Any] | None:
        """The pair of features whose correlation moved most (varying in both tables)."""
        d = self._corr_diff()
        if not np.isfinite(d).any():
            return None
        i, j = np.unravel_index(int(np.nanargmax(d)), d.shape)
        return {
            "features": [self.feature_names[i], self.feature_names[j]],
            "original": float(self.corr_original[i, j]),
            "release": float(self.corr_release[i, j]),
        }

    @property
    def corr_empty(self) -> list[str]:
        """Features (categories) that no row, or every row, of one of the tables holds."""
        if self.corr_live is None:
            return []
        return [n for n, ok in zip(self.feature_names, self.corr_live, strict=True) if not ok]

    def headline(self) -> str:
        """The verdict in a few words: ``verdict: weak (set by pairs, associations;
        marginals useful)``, the parts that set it (the worst) and the others' verdicts; the
        numbers behind it are :meth:`details`.

        A report without parts (a model's, a projection's, one that gives no verdict) reads
        ``verdict: <verdict>`` alone."""
        judged = [p for p in self.verdict_parts if p["verdict"] in VERDICTS]
        if not judged or self.verdict not in VERDICTS:
            return f"verdict: {self.verdict}"
        worst = ", ".join(p["part"] for p in judged if p["verdict"] == self.verdict)
        others = sorted(
            (p for p in judged if p["verdict"] != self.verdict),
            key=lambda p: -VERDICTS.index(p["verdict"]),
        )
        rest = "".join(f"; {p['part']} {p['verdict']}" for p in others)
        return f"verdict: {self.verdict} (set by {worst}{rest})"

    def details(self) -> list[str]:
        """The lines under :meth:`headline`: each part's verdict and numbers (the deciding
        parts first), else the verdict's basis; a group-by report's rows dropped by its caps;
        for an add/remove release, its replace-one equivalent (see :meth:`summary`)."""
        judged = [p for p in self.verdict_parts if p["verdict"] in VERDICTS]
        if judged and self.verdict in VERDICTS:
            order = sorted(self.verdict_parts, key=lambda p: -_rank(p["verdict"]))
            lines = [f"{p['part']}: {p['verdict']} ({p['basis']})" for p in order]
        else:
            lines = [self.verdict_basis]
        if self.kind == "groupby" and self.bounding:
            lines.append(bounding_line(self.bounding))
        also = _replace_one(self.guarantee)
        if also:
            lines.append(
                f"the release is add/remove, {also}: compare it with replace-one releases at "
                "that budget, not at the same ε"
            )
        return lines

    def summary(self) -> str:
        """One line (for logs): the verdict and the numbers behind it; people read
        :meth:`headline` and :meth:`details` (``ppdp report`` prints them).

        The verdict judges utility only. For an add/remove release the line adds its
        replace-one equivalent (:func:`ppdp.accounting.receipt.replace_one_equivalent`): its
        utility was bought with about twice the replace-one ε, and is fairly compared with
        replace-one releases at that budget, not at the same ε."""
        line = f"verdict: {self.verdict} ({self.verdict_basis})"
        if self.kind == "groupby" and self.bounding:
            line += f"; {bounding_line(self.bounding)}"
        also = _replace_one(self.guarantee)
        if also:
            line += (
                f"; the release is add/remove, {also}: compare it with replace-one releases "
                "at that budget, not at the same ε"
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe numbers (NaN becomes ``null``)."""
        data = {
            "kind": self.kind,
            "verdict": self.verdict,
            "verdict_basis": self.verdict_basis,
            "thresholds": dict(THRESHOLDS),
            "n_original": self.n_original,
            "n_release": self.n_release,
            "guarantee": None if self.guarantee is None else self.guarantee.to_dict(),
            "guarantee_summary": None if self.guarantee is None else self.guarantee.summary(),
            "guarantee_replace_one": _replace_one(self.guarantee),
            "release_info": self.release_info,
            "notes": list(self.notes),
            "columns": [
                {k: v for k, v in c.items() if k not in ("p_original", "p_release", "cells")}
                | {
                    "cells": c["cells"],
                    "original": c["p_original"].tolist(),
                    "release": c["p_release"].tolist(),
                }
                for c in self.columns
            ],
            "correlation": {
                "features": self.feature_names,
                "original": self.corr_original.tolist(),
                "release": self.corr_release.tolist(),
                "max_abs_difference": self.corr_max_abs_diff,
                "mean_abs_difference": self.corr_mean_abs_diff,
                "largest_difference": self.corr_largest,
                "constant_features": self.corr_empty,
            },
            "cramers_v": {
                "columns": self.categorical_names,
                "original": self.cramers_original.tolist(),
                "release": self.cramers_release.tolist(),
                "max_abs_difference": _max_abs(self.cramers_original - self.cramers_release),
            },
            "ml_utility": self.ml,
            "verdict_parts": self.verdict_parts,
            "pairs": self.pairs,
            "bounding": self.bounding,
            "groups": self.groups,
        }
        if self.lda is not None:
            data["lda"] = {k: v for k, v in self.lda.items() if not k.startswith("_")}
        return _json_safe(data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, its parts and the notes (no figures: the full page
        is :meth:`to_html`)."""
        from html import escape

        rows = "".join(
            f"<tr><td>{escape(p['part'])}</td><td>{escape(p['verdict'])}</td>"
            f"<td style='text-align:left'>{escape(p['basis'])}</td></tr>"
            for p in self.verdict_parts
        )
        parts = (
            f"<table><tr><th>part</th><th>verdict</th><th>numbers</th></tr>{rows}</table>"
            if rows
            else f"<p>{escape(self.verdict_basis)}</p>"
        )
        g = "" if self.guarantee is None else f"<p>{escape(self.guarantee.summary())}</p>"
        notes = "".join(f"<li>{escape(n)}</li>" for n in self.notes)
        return (
            f"<p><strong>Verdict: {escape(self.verdict)}</strong> (for the custodian only: "
            f"it compares the release with the private data)</p>{parts}{g}"
            + (f"<ul>{notes}</ul>" if notes else "")
            + "<p><code>report.to_html(path)</code> writes the full page with its figures.</p>"
        )

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The self-contained HTML page; written to ``path`` when given. Needs matplotlib."""
        from ppdp.evaluate._report_html import render

        text = render(self)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text


def _max_abs(d: NDArray[np.float64]) -> float:
    return float(np.max(np.abs(d))) if d.size else 0.0


def _json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_safe(v) for v in x]
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return _json_safe(x.tolist())
    return x


def _rank(verdict: str) -> int:
    """A part's place in :meth:`QualityReport.details`: the worst first, an unjudged part
    (a target with nothing to keep) last."""
    return VERDICTS.index(verdict) if verdict in VERDICTS else -1


def _replace_one(g: Guarantee | None) -> str | None:
    """An add/remove guarantee's replace-one equivalent in words (None otherwise)."""
    from ppdp.accounting.receipt import replace_one_equivalent

    return None if g is None else replace_one_equivalent(g)


def _guarantee(g: Any) -> tuple[Guarantee | None, dict[str, Any]]:
    if g is None:
        return None, {}
    if isinstance(g, Guarantee):
        return g, {}
    if isinstance(g, dict):
        raw = g.get("guarantee", g)
        try:
            guarantee = Guarantee.from_dict(raw)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise ParameterError(f"the release's guarantee is not readable: {exc}") from None
        info = {k: g[k] for k in ("method", "ledger", "ledger_indices", "seeded") if k in g}
        return guarantee, info
    raise ParameterTypeError(
        f"guarantee ({type(g).__name__}) must be a Guarantee, a sidecar dict or None"
    )


def quality_report(
    original: pd.DataFrame,
    release: pd.DataFrame,
    schema: Schema,
    *,
    holdout: pd.DataFrame | None = None,
    target: str | None = None,
    guarantee: Guarantee | dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> QualityReport:
    """Measure how well a released table keeps the private table's structure.

    Parameters
    ----------
    original : DataFrame
        The private table the release was made from (every schema column).
    release : DataFrame
        The released table: exactly the schema's columns (in any order).
    schema : Schema
        The declared schema (bounds and categories set the histograms and the encoding).
    holdout : DataFrame, optional
        Original rows that took no part in the release, to test the classifiers on. Without
        it a random 30 % of ``original`` is held out (optimistic for the release).
    target : str, optional
        A categorical column (or the label) to predict; gives the ML utility and bases the
        verdict on it. Without it the verdict comes from the marginal distances.
    guarantee : Guarantee or dict, optional
        The release's guarantee, or the content of its ``.guarantee.json`` sidecar.
    progress : callable, optional
        Called with a short line as each stage starts (``ppdp report`` prints them on
        stderr; ``-q`` silences them).

    Returns
    -------
    QualityReport

    Notes
    -----
    Reads the private data: the report is for the custodian, is not differentially
    private, and costs no budget. See :data:`THRESHOLDS` for the verdicts.
    """
    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    _guarantee(guarantee)  # a bad guarantee is refused before the tables are read
    cols, target_col = report_columns(schema, target)
    bounding = bounding_of(original, schema, guarantee)
    original = _check_table("original", original, schema, exact=False)
    release = _check_table("release", release, schema, exact=True)
    if holdout is not None:
        if target is None:
            raise ParameterError("a holdout is only used with a target: give target= as well")
        if not isinstance(holdout, pd.DataFrame):
            raise ParameterTypeError(
                f"holdout ({type(holdout).__name__}) must be a pandas DataFrame"
            )
        if target not in [str(c) for c in holdout.columns]:
            raise DataValidationError(f"the holdout has no column {target!r} (the target)")
        holdout = _check_table("holdout", holdout, schema, exact=False)

    say = progress or (lambda line: None)
    say(f"marginals of {len(cols)} columns ({len(original):,} and {len(release):,} rows)")
    counts = (column_counts(original, cols, "original"), column_counts(release, cols, "release"))
    rng = np.random.default_rng(_SEED)
    orig_s = original.iloc[_sample(len(original), rng)]
    rel_s = release.iloc[_sample(len(release), rng)]
    report = _assemble(
        cols,
        counts,
        (len(original), len(release)),
        (orig_s, rel_s),
        (original, release, holdout),
        target_col,
        guarantee,
        progress=say,
    )
    report.bounding = bounding
    return report


def bounding_of(original: Any, schema: Schema, guarantee: Any) -> dict[str, Any] | None:
    """Under a privacy unit, what the release's ``max_rows`` dropped of ``original``
    (:func:`ppdp.data.contribution.dropped_share`), else None; for a release that states
    group caps (GroupBy's ``max_groups``, ``max_rows_per_group``), what each cap dropped
    (:func:`ppdp.evaluate.group_bounding.group_bounding`).

    The cap is :func:`bounding_cap`'s; the report reads the private table, so this is for
    the custodian only, like the rest of it.
    """
    unit = schema.privacy_unit
    if unit is None or not isinstance(original, pd.DataFrame) or unit.column not in original:
        return None
    k = bounding_cap(schema, guarantee)
    if k is None:
        return None
    from ppdp.data.contribution import dropped_share

    block = dropped_share(original[unit.column], unit.column, k)
    g, _ = _guarantee(guarantee)
    if g is None:
        return block
    from ppdp.evaluate.group_bounding import group_bounding

    return group_bounding(original, schema, g, block)


def bounding_line(b: dict[str, Any]) -> str:
    """A bounding block (:func:`bounding_of`) in words: the share dropped, per cap
    ("about" where a cap's count is one draw of the bounding). Custodian only."""
    about = "" if b.get("exact", True) else "about "
    caps = [
        f"{b['by_cap'][cap]:,} by {cap}={b[cap]}"
        for cap in ("max_rows_per_group", "max_groups", "max_rows")
        if b.get(cap) is not None and cap in b["by_cap"]
    ]
    caps.append(f"{b['by_cap']['missing_ids']:,} without an id")
    return (
        f"bounding (custodian only): {about}{b['share_dropped']:.1%} of {b['rows']:,} rows "
        f"dropped ({'; '.join(caps)})"
    )


def release_guarantee(guarantee: Any) -> Guarantee | None:
    """The :class:`Guarantee` of a guarantee or a sidecar dict (None for None)."""
    return _guarantee(guarantee)[0]


def bounding_cap(schema: Schema, guarantee: Any) -> int | None:
    """The ``max_rows`` a release under the schema's privacy unit read: the guarantee's
    (``details["privacy_unit"]["max_rows"]``: a ``max_rows: auto`` release states the one
    it chose), else the schema's declared one; None without a unit, or for ``auto``
    without a guarantee that states it."""
    unit = schema.privacy_unit
    if unit is None:
        return None
    g, _ = _guarantee(guarantee)
    stated = g.details.get("privacy_unit") if g is not None else None
    k = stated.get("max_rows") if isinstance(stated, dict) else None
    if not isinstance(k, int) or isinstance(k, bool):
        if unit.is_auto:
            return None  # no release states the cap it chose
        k = unit.max_rows
    return int(k)


def report_columns(schema: Schema, target: str | None) -> tuple[list[Any], Any]:
    """The report's columns (features, then the label) and the target column, checked."""
    cols = _schema_columns(schema)
    by_name = {c.name: c for c in cols}
    if target is None:
        return cols, None
    if target not in by_name:
        near = near_names([target], by_name, where="the schema")
        raise ParameterError(
            f"target {target!r} is not a column of the schema "
            f"({', '.join(repr(n) for n in by_name)}){near}"
        )
    t = by_name[target]
    if not isinstance(t, CategoricalColumn):
        raise ParameterError(
            f"target {target!r} is numeric; the ML utility needs a categorical column or the label"
        )
    return cols, t


def column_counts(
    df: pd.DataFrame, cols: list[NumericColumn | CategoricalColumn], name: str
) -> dict[str, NDArray[np.int64]]:
    """What the marginals and bound shares need of ``df``, as counts that add up over parts.

    Per numeric column: the histogram counts on :func:`histogram_edges` (values outside
    the bounds in the end bins), then the values at the lower bound, at the upper bound,
    and the finite values: ``len(histogram_edges(col)) + 2`` numbers. Per categorical
    column: the count of each declared category, then of every other value, then of the
    missing values (left out of its shares, like a numeric column's). A table split
    into partitions gives the whole table's counts as the sum of its partitions' counts.
    """
    out: dict[str, NDArray[np.int64]] = {}
    for col in cols:
        s = df[col.name]
        if isinstance(col, NumericColumn):
            v = _numeric(name, col, s)
            v = v[np.isfinite(v)]
            edges = histogram_edges(col)
            hist, _ = np.histogram(np.clip(v, col.lower, col.upper), bins=edges)
            tol = 1e-9 * (col.upper - col.lower)
            ends = [int(np.sum(v <= col.lower + tol)), int(np.sum(v >= col.upper - tol)), v.size]
            out[col.name] = np.concatenate([hist, ends]).astype(np.int64)
        else:
            cats = [str(c) for c in col.categories]
            present = s.dropna()
            values = present.astype(str)
            counts = values.value_counts().reindex(cats, fill_value=0).to_numpy()
            undeclared = int(len(values) - counts.sum())
            missing = int(len(s) - len(present))
            out[col.name] = np.append(counts, [undeclared, missing]).astype(np.int64)
    return out


def add_counts(
    a: dict[str, NDArray[np.int64]], b: dict[str, NDArray[np.int64]]
) -> dict[str, NDArray[np.int64]]:
    """The counts of two parts of a table (:func:`column_counts`) added column by column."""
    return {k: a[k] + b[k] for k in a}


def _marginal_of(
    col: NumericColumn | CategoricalColumn, c: NDArray[np.int64]
) -> tuple[NDArray[np.float64], list[str]]:
    """Shares over fixed public cells (histogram bins or declared categories) from counts."""
    if isinstance(col, NumericColumn):
        edges = histogram_edges(col)
        bins = edges.size - 1
        counts = c[:bins]
        text = day_text if col.date else (lambda v: f"{v:g}")
        labels = [f"{text(edges[i])}–{text(edges[i + 1])}" for i in range(bins)]
    else:
        labels = [str(x) for x in col.categories]
        present = c[:-1]  # the missing values' cell is left out of the shares
        counts = present if present[-1] else present[:-1]
        if present[-1]:
            labels = [*labels, _UNDECLARED]
    total = counts.sum()
    return (counts / total if total else counts.astype(float)), labels


def _bounds_of(col: NumericColumn, c: NDArray[np.int64]) -> tuple[float, float]:
    """Shares of the finite values at the lower and at the upper bound, from counts."""
    bins = histogram_edges(col).size - 1
    finite = int(c[bins + 2])
    if finite == 0:
        return 0.0, 0.0
    return float(c[bins] / finite), float(c[bins + 1] / finite)


def _column_entries(
    cols: list[NumericColumn | CategoricalColumn],
    counts: tuple[dict[str, NDArray[np.int64]], dict[str, NDArray[np.int64]]],
) -> list[dict[str, Any]]:
    columns: list[dict[str, Any]] = []
    for col in cols:
        c0, c1 = counts[0][col.name], counts[1][col.name]
        p, cells = _marginal_of(col, c0)
        q, cells_q = _marginal_of(col, c1)
        if len(cells_q) > len(cells):
            cells = cells_q
        entry: dict[str, Any] = {
            "name": col.name,
            "type": "numeric" if isinstance(col, NumericColumn) else "categorical",
            "tv": _tv(p, q),
            "tv_uniform": _tv(p, _uniform(col)),
            "cells": cells,
            "p_original": p,
            "p_release": q,
        }
        if isinstance(col, NumericColumn):
            entry["lower"], entry["upper"] = float(col.lower), float(col.upper)
            if col.date:  # bounds and edges in days since 1970-01-01, drawn as dates
                entry["date"] = True
            if col.cuts is not None:
                entry["edges"] = histogram_edges(col).tolist()
            elif col.scale == "log":  # equal widths on the log scale, drawn on that scale
                entry["log_edges"] = histogram_edges(col).tolist()
            lo, hi = _bounds_of(col, c1)
            lo0, hi0 = _bounds_of(col, c0)
            entry.update(
                release_at_lower=lo,
                release_at_upper=hi,
                original_at_lower=lo0,
                original_at_upper=hi0,
            )
        else:
            entry["release_undeclared"] = float(q[len(col.categories) :].sum())
        columns.append(entry)
    return columns


#: Most encoded features of the correlation map: a wider encoding keeps each categorical
#: column's commonest real categories only (stated on the page).
MAX_FEATURES = 400


def _wide_keep(
    df: pd.DataFrame, cols: list[NumericColumn | CategoricalColumn]
) -> dict[str, list[str]] | None:
    """For an encoding wider than :data:`MAX_FEATURES`: the categories each categorical
    column keeps (its commonest in ``df``, the original's sample); None otherwise."""
    cats = [c for c in cols if isinstance(c, CategoricalColumn)]
    width = len(cols) - len(cats) + sum(len(c.categories) for c in cats)
    if width <= MAX_FEATURES or not cats:
        return None
    per = max(1, (MAX_FEATURES - (len(cols) - len(cats))) // len(cats))
    keep = {}
    for col in cats:
        texts = [str(c) for c in col.categories]
        if len(texts) <= per:
            continue
        counts = pd.Series(df[col.name]).astype(str).value_counts()
        counts = counts.reindex(texts, fill_value=0)
        keep[col.name] = [texts[i] for i in np.argsort(-counts.to_numpy(), kind="stable")[:per]]
    return keep


def _wide_note(keep: dict[str, list[str]]) -> str:
    per = max(len(v) for v in keep.values())
    return (
        f"the table encodes to more than {MAX_FEATURES} features: the correlation map keeps "
        f"the {per} commonest real categories of each of {len(keep)} categorical columns and "
        f"uses a seeded sample of at most {pairs_mod.PAIR_ROWS:,} rows of each table"
    )


def _assemble(
    cols: list[NumericColumn | CategoricalColumn],
    counts: tuple[dict[str, NDArray[np.int64]], dict[str, NDArray[np.int64]]],
    sizes: tuple[int, int],
    samples: tuple[pd.DataFrame, pd.DataFrame],
    ml_tables: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None],
    target_col: CategoricalColumn | None,
    guarantee: Any,
    extra_notes: tuple[str, ...] = (),
    progress: Callable[[str], None] | None = None,
) -> QualityReport:
    """The report from the column counts, the seeded samples and the ML utility's tables."""
    say = progress or (lambda line: None)
    g, info = _guarantee(guarantee)
    columns = _column_entries(cols, counts)
    n_original, n_release = sizes
    orig_s, rel_s = samples
    keep = _wide_keep(orig_s, cols)
    if keep is not None:  # a wide table: a smaller sample and the commonest categories
        rng = np.random.default_rng(_SEED + 1)
        orig_s = orig_s.iloc[_sample(len(orig_s), rng, pairs_mod.PAIR_ROWS)]
        rel_s = rel_s.iloc[_sample(len(rel_s), rng, pairs_mod.PAIR_ROWS)]
        extra_notes = (*extra_notes, _wide_note(keep))
    say("correlations")
    X0, names = _encode(orig_s, cols, "original", keep)
    X1, _ = _encode(rel_s, cols, "release", keep)
    with _one_thread():
        corr0, corr1 = _corr(X0), _corr(X1)
    live = (X0.std(axis=0) > 1e-12) & (X1.std(axis=0) > 1e-12)
    del X0, X1
    cats = [c for c in cols if isinstance(c, CategoricalColumn)]
    ml = None
    if target_col is not None:
        say(f"classifiers predicting {target_col.name!r}")
        ml = _ml_utility(*ml_tables, cols, target_col)
        if n_original > MAX_ROWS or n_release > MAX_ROWS:
            ml["sampled"] = True
    say(f"{len(cols) * (len(cols) - 1) // 2:,} pairs of columns")
    with _one_thread():
        view = pair_view(orig_s, rel_s, cols, dependence=THRESHOLDS["dependence_floor"])
    pairs = pair_summary(view, THRESHOLDS["strong_association"], THRESHOLDS["kept_association"])
    verdict, basis, parts = _verdict_table(columns, pairs, ml)
    alarm = undeclared_alarm(cols, counts)
    if alarm is not None:
        verdict, basis = NOT_JUDGED, alarm
    notes = []
    if guarantee is None:
        notes.append(
            "no guarantee was given (no .guarantee.json beside the release): this report "
            "cannot say what the release promises"
        )
    if target_col is None:
        notes.append(
            "no target was given (target=, --target COL): no classifier was trained; the "
            "verdict rests on the marginals, the pairs and the associations"
        )
    if n_original > MAX_ROWS or n_release > MAX_ROWS:
        notes.append(
            f"the association maps and the classifiers use a seeded random sample of at most "
            f"{MAX_ROWS:,} rows of each table; the column marginals and bound shares use every row"
        )
    missing = missing_note(cols, counts[0], n_original)
    if missing is not None:
        notes.append(missing)
    notes.extend(crowded_notes(cols, counts[0]))
    notes.extend(extra_notes)
    return QualityReport(
        verdict=verdict,
        verdict_basis=basis,
        n_original=n_original,
        n_release=n_release,
        columns=columns,
        feature_names=names,
        corr_original=corr0,
        corr_release=corr1,
        ml=ml,
        guarantee=g,
        release_info=info,
        notes=notes,
        categorical_names=[c.name for c in cats],
        cramers_original=_cramers_v(orig_s, cats),
        cramers_release=_cramers_v(rel_s, cats),
        verdict_parts=parts,
        pairs=pairs,
        corr_live=live,
    )


def model_report(
    model: Any,
    holdout: pd.DataFrame,
    *,
    original: pd.DataFrame | None = None,
) -> QualityReport:
    """How well a private model (a ``ppdp train`` model file) predicts held-out rows.

    Parameters
    ----------
    model : path or ModelFile
        A model file written by ``ppdp train`` (it carries its schema and guarantee).
    holdout : DataFrame
        Original rows that took no part in training, with the label column.
    original : DataFrame, optional
        The private training rows: the reference is then logistic regression trained on them
        without privacy, and the majority class is theirs. Without it the reference is the
        same model cross-fitted on two halves of the holdout, and the majority class is the
        holdout's.

    Returns
    -------
    QualityReport
        ``kind == "model"``; the verdict uses the same thresholds as a table's with a target.
    """
    from ppdp.learn import ModelFile, read_model

    mf = model if isinstance(model, ModelFile) else read_model(model)
    name = str(model) if not isinstance(model, ModelFile) else mf.estimator_name
    schema = mf.schema
    if schema is None or schema.label is None:
        raise ParameterError(f"the model file ({name!r}) holds no schema with a label")
    target = schema.label.name
    if not isinstance(holdout, pd.DataFrame):
        raise ParameterTypeError(f"holdout ({type(holdout).__name__}) must be a pandas DataFrame")
    if target not in [str(c) for c in holdout.columns]:
        raise DataValidationError(f"the holdout has no column {target!r} (the model's label)")
    holdout = _check_table("holdout", holdout, schema, exact=False)
    if original is not None:
        original = _check_table("original", original, schema, exact=False)
    classes = [str(c) for c in schema.label.classes]
    codes = _codes(holdout[target], classes)
    keep = codes >= 0
    holdout = holdout.loc[keep]
    y = codes[keep].astype(np.int64)
    if y.size == 0:
        raise DataValidationError(f"the holdout holds none of the classes of {target!r}")
    features = schema.without_label()
    raw = holdout[list(features.column_names)]
    if getattr(mf.estimator, "schema", None) is not None:  # fitted with schema=: a raw table
        scores = np.asarray(mf.estimator.decision_function(raw), dtype=np.float64)
    else:
        X, _ = features.encode(raw)
        scores = np.asarray(mf.estimator.decision_function(X), dtype=np.float64)
    pred = (scores > 0).astype(np.int64)  # positive means the second class
    both = 0 < int(y.sum()) < y.size
    rel: dict[str, Any] = {
        "accuracy": float(np.mean(pred == y)),
        "auc": roc_auc(y == 1, scores) if both else float("nan"),
    }
    if both:
        rel["roc"] = roc_curve_points(y == 1, scores)
    cols = _schema_columns(schema)
    feats = [c for c in cols if c.name != target]
    Xh, _ = _encode(holdout, feats, "holdout")
    if original is not None:
        oc = _codes(original[target], classes)
        ok = oc >= 0
        Xo, _ = _encode(original.loc[ok], feats, "original")
        yo = oc[ok].astype(np.int64)
        i = _sample(len(yo), np.random.default_rng(_SEED))
        real = _fit_score(Xo[i], yo[i], Xh, y, len(classes))
        counts = np.bincount(yo, minlength=len(classes))
        ref = "logistic regression trained on the original rows without privacy"
    else:
        half = np.random.default_rng(_SEED).permutation(y.size) < y.size // 2
        a = _fit_score(Xh[half], y[half], Xh[~half], y[~half], len(classes))
        b = _fit_score(Xh[~half], y[~half], Xh[half], y[half], len(classes))
        real = {k: (a[k] + b[k]) / 2 for k in ("accuracy", "auc")}
        counts = np.bincount(y, minlength=len(classes))
        ref = (
            "logistic regression without privacy, cross-fitted on two halves of the holdout "
            "(give the training rows for a reference trained on them)"
        )
    majority = int(np.argmax(counts))
    lift = _lift(rel, real, y, len(classes))
    ml = {
        "target": target,
        "subject": "the private model",
        "model": f"the private model ({mf.estimator_name}); reference: {ref}",
        "test": f"the holdout ({y.size:,} rows)",
        "n_test": int(y.size),
        "release": rel,
        "real": real,
        "majority": {
            "accuracy": float(np.mean(y == majority)),
            "auc": 0.5,
            "class": classes[majority],
        },
        "lift": lift,
    }
    verdict, basis = _verdict_ml(ml)
    notes = [] if mf.guarantee is not None else ["the model file states no guarantee"]
    return QualityReport(
        verdict=verdict,
        verdict_basis=basis,
        n_original=0 if original is None else len(original),
        n_release=0,
        columns=[],
        feature_names=[],
        corr_original=np.zeros((0, 0)),
        corr_release=np.zeros((0, 0)),
        ml=ml,
        guarantee=mf.guarantee,
        release_info={"model": mf.estimator_name, "ppdp_version": mf.ppdp_version},
        notes=notes,
        kind="model",
    )


def _crossfit(
    Z: NDArray[np.float64], y: NDArray[np.int64], k: int, rng: np.random.Generator
) -> dict[str, Any]:
    """Logistic regression cross-fitted on two random halves of (Z, y): out-of-fold scores."""
    half = rng.permutation(y.size) < y.size // 2
    proba = np.full((y.size, k), 1.0 / k)
    pred = np.full(y.size, int(np.argmax(np.bincount(y, minlength=k))))
    for train in (half, ~half):
        test = ~train
        if np.unique(y[train]).size < 2 or not test.any():
            continue
        with _one_thread():
            model = _model("logreg").fit(Z[train], y[train])
            p = np.zeros((int(test.sum()), k))
            p[:, model.classes_] = model.predict_proba(Z[test])
            pred[test] = model.predict(Z[test])
        proba[test] = p
    return _score(y, proba, pred, k)


#: Bins of the projection histograms of an LDA projection report.
_PROJ_BINS = 40


def lda_projection_report(
    original: pd.DataFrame,
    release: pd.DataFrame,
    schema: Schema,
    sidecar: dict[str, Any],
    *,
    holdout: pd.DataFrame | None = None,
    target: str | None = None,
) -> QualityReport:
    """How well an LDA projection release (``ppdp publish lda-projection``) separates the classes.

    The released direction(s) ``W`` (from the sidecar) project rows as ``z = Wᵀ(encode(x)/R)``.
    Three classifiers are trained and tested on the same held-out real rows:

    * *the released direction*: logistic regression on the exact projections of the
      original rows (the best use of the direction alone);
    * *the released rows* (``noisy-projections`` or ``raw-projections`` releases): logistic
      regression on the released projections, each with its original row's label,
      cross-fitted on two random halves of the released rows (out-of-fold scores): what a
      recipient of the rows who knew some labels could predict of the others;
    * *the real data*: logistic regression on every encoded feature of the original rows.

    The verdict rests on the released rows when there are any, else on the direction, with
    the thresholds of :data:`THRESHOLDS`.

    Parameters
    ----------
    original : DataFrame
        The private table the release was made from, rows in the same order.
    release : DataFrame
        The released table: ``lda_1..lda_r`` (one row per original row) or, for a
        ``direction`` release, ``feature, lda_1..lda_r``.
    schema : Schema
        The schema the release was published with (it has the label).
    sidecar : dict
        The release's ``.guarantee.json``: its ``guarantee``, ``directions``, ``features``
        and ``row_scale``.
    holdout : DataFrame, optional
        Original rows that took no part in the release. Without it a random 30 % of
        ``original`` is held out (optimistic: the direction saw those rows).
    target : str, optional
        The label (the default); an LDA direction separates the label's classes only.

    Returns
    -------
    QualityReport
        ``kind == "lda-projection"``.
    """
    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    if schema.label is None:
        raise ParameterError("the schema has no label: an LDA projection separates its classes")
    label = schema.label.name
    if target is not None and target != label:
        raise ParameterError(
            f"target {target!r} is not the schema's label ({label!r}): an LDA projection "
            "separates the label's classes; leave the target out or give the label"
        )
    if not isinstance(sidecar, dict):
        raise ParameterTypeError(
            f"sidecar ({type(sidecar).__name__}) must be the release's .guarantee.json content"
        )
    g, info = _guarantee(sidecar)
    try:
        W = np.asarray(sidecar["directions"], dtype=np.float64)
        scale = float(sidecar["row_scale"])
        feats = [str(f) for f in sidecar["features"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ParameterError(
            f"the release's guarantee file lacks a readable direction ({exc}): it must hold "
            "'directions', 'features' and 'row_scale' as written by ppdp publish lda-projection"
        ) from None
    if W.ndim != 2 or W.shape[0] != len(feats) or not np.isfinite(W).all() or not scale > 0:
        raise ParameterError(
            f"the release's directions (shape {W.shape}) and row scale ({scale!r}) are not "
            "a valid LDA projection: restore the guarantee file"
        )
    if feats != list(schema.feature_names):
        raise DataValidationError(
            "the release's directions are over other encoded features than this schema's: give "
            "the schema the release was published with"
        )
    r = W.shape[1]
    lda_cols = [f"lda_{j + 1}" for j in range(r)]
    if not isinstance(release, pd.DataFrame):
        raise ParameterTypeError(f"release ({type(release).__name__}) must be a pandas DataFrame")
    have = [str(c) for c in release.columns]
    original = _check_table("original", original, schema, exact=False)
    if have == ["feature", *lda_cols]:
        rows = None
    elif have == lda_cols:
        rows = release.to_numpy(dtype=np.float64)
        if len(rows) != len(original):
            raise DataValidationError(
                f"the release has {len(rows):,} rows and the original {len(original):,}: give the "
                "table the release was made from, rows in the same order"
            )
    else:
        raise DataValidationError(
            f"the release's columns ({', '.join(have[:5])}) are not an LDA projection "
            f"release's ({', '.join(lda_cols)}, or feature and those)"
        )
    if holdout is not None:
        if not isinstance(holdout, pd.DataFrame):
            raise ParameterTypeError(
                f"holdout ({type(holdout).__name__}) must be a pandas DataFrame"
            )
        if label not in [str(c) for c in holdout.columns]:
            raise DataValidationError(f"the holdout has no column {label!r} (the target)")
        holdout = _check_table("holdout", holdout, schema, exact=False)

    rng = np.random.default_rng(_SEED)
    classes = [str(c) for c in schema.label.classes]
    k = len(classes)
    released_rows = None
    if rows is not None:  # before the split: the released rows are judged among themselves
        pick = _sample(len(rows), rng)
        codes = _codes(original[label].iloc[pick], classes)
        ok = codes >= 0
        rows = rows[pick][ok]
        released_rows = _crossfit(rows, codes[ok].astype(np.int64), k, rng)
        row_labels = codes[ok].astype(np.int64)
    test_df, train_df, test_note, _ = _test_split(original, holdout, rng)
    test_df, capped = _cap_test(test_df, rng)
    train_df = train_df.iloc[_sample(len(train_df), rng)]
    features = schema.without_label()
    cols = _schema_columns(schema)
    feat_cols = [c for c in cols if c.name != label]

    def project(df: pd.DataFrame) -> tuple[NDArray[np.float64], NDArray[np.float64], Any]:
        X, _ = features.encode(df[list(features.column_names)])
        codes = _codes(df[label], classes)
        return (X / scale) @ W, X, codes

    z_tr, _, y_tr = project(train_df)
    z_te, _, y_te = project(test_df)
    keep_tr, keep_te = y_tr >= 0, y_te >= 0
    if not keep_te.any():
        raise DataValidationError(f"the test rows hold none of the classes of {label!r}")
    y_tr, y_te = y_tr[keep_tr].astype(np.int64), y_te[keep_te].astype(np.int64)
    z_tr, z_te = z_tr[keep_tr], z_te[keep_te]
    X_real, _ = _encode(train_df.loc[keep_tr], feat_cols, "original")
    X_te, _ = _encode(test_df.loc[keep_te], feat_cols, "holdout")
    direction = _fit_score(z_tr, y_tr, z_te, y_te, k)
    real = _fit_score(X_real, y_tr, X_te, y_te, k)
    counts = np.bincount(y_tr, minlength=k)
    majority = int(np.argmax(counts))
    subject = "the released rows" if rows is not None else "the released direction"
    main = released_rows if released_rows is not None else direction
    ml: dict[str, Any] = {
        "target": label,
        "subject": subject,
        "model": "logistic regression (scikit-learn, default settings)",
        "test": test_note + capped,
        "n_test": int(y_te.size),
        "release": main,
        "direction": direction,
        "released_rows": released_rows,
        "real": real,
        "majority": {
            "accuracy": float(np.mean(y_te == majority)),
            "auc": 0.5,
            "class": classes[majority],
        },
        "lift": _lift(main, real, y_te, k),
        "direction_lift": _lift(direction, real, y_te, k),
    }
    verdict, basis = _verdict_ml(ml)
    mode = (g.details.get("release") if g is not None else None) or (
        "direction" if rows is None else "projections"
    )
    lda: dict[str, Any] = {"release": mode, "n_components": r, "n_features": len(feats)}
    # The first projection, per class: exact (original rows) and released (noisy rows).
    values = [z_tr[:, 0]] + ([rows[:, 0]] if rows is not None else [])
    both = np.concatenate(values)
    lo, hi = np.quantile(both, [0.005, 0.995]) if both.size else (-1.0, 1.0)
    lo, hi = min(float(lo), -1e-3), max(float(hi), 1e-3)
    edges = np.linspace(lo, hi, _PROJ_BINS + 1)

    def shares(v: NDArray[np.float64]) -> list[float]:
        c, _ = np.histogram(np.clip(v, lo, hi), bins=edges)
        return (c / max(int(c.sum()), 1)).tolist()

    lda["histogram"] = {
        "edges": edges.tolist(),
        "classes": classes,
        "exact": [shares(z_tr[y_tr == c, 0]) for c in range(k)],
        "released": (
            None if rows is None else [shares(rows[row_labels == c, 0]) for c in range(k)]
        ),
    }
    notes = []
    if g is None:
        notes.append("the guarantee file holds no guarantee")
    if holdout is None:
        notes.append(
            "no holdout was given: the test rows took part in the release, so the scores are "
            "optimistic"
        )
    if len(original) > MAX_ROWS:
        notes.append(f"the classifiers use a seeded random sample of {MAX_ROWS:,} original rows")
    return QualityReport(
        verdict=verdict,
        verdict_basis=basis,
        n_original=len(original),
        n_release=0 if rows is None else len(release),
        columns=[],
        feature_names=[],
        corr_original=np.zeros((0, 0)),
        corr_release=np.zeros((0, 0)),
        ml=ml,
        guarantee=g,
        release_info=info,
        notes=notes,
        kind="lda-projection",
        lda=lda,
    )
