"""The two-way view of a quality report: every pair of columns, real against released.

Each column is cut into at most :data:`PAIR_CELLS` coarse cells (a numeric column's report
bins merged in runs; a categorical column's most frequent real codes, the rest as
"other"), and every pair's joint distribution is counted on a seeded sample of at most
:data:`PAIR_ROWS` rows (fewer for a wide table: :data:`PAIR_BUDGET`) of three tables: the
original, the release, and the *shuffled baseline*: as many rows as the release, each column
drawn on its own from the original's (with replacement): the real marginals, with the
sampling noise of a table of that size, and no association at all. Per pair:

* ``tv``: the total-variation distance of the released joint distribution to the real one;
* ``tv_shuffled``: the same distance for the shuffled baseline;
* ``tv_uniform``: the same distance for the trivial release (every column uniform within
  its bounds or categories, independently);
* ``tv_resampled``: the same distance for a resample of the original's rows (each row whole,
  with replacement, as many as the release): what a perfect release of that size scores,
  for the pairs whose real association reaches ``dependence`` (NaN for the others);
* ``v_original``, ``v_release``: Cramér's V of the pair with Bergsma's bias correction
  (so two independent columns score about 0 whatever their number of cells);
* ``r_original``, ``r_release``: Pearson's correlation of two numeric columns (scaled by
  their bounds, a ``scale: log`` column on its log scale), None for other pairs.

Like the rest of the report it reads the private data: for the custodian only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data.columns import CategoricalColumn, NumericColumn
from ppdp.evaluate._report_common import _codes, _numeric, histogram_edges

__all__ = [
    "PAIR_CELLS",
    "PAIR_ROWS",
    "WORST_PAIRS",
    "PairView",
    "pair_summary",
    "pair_tables",
    "pair_view",
]

#: Most coarse cells per column in the two-way view (so at most 100 cells per pair).
PAIR_CELLS = 10
#: Rows of each table the two-way view counts at most (a seeded sample beyond that).
PAIR_ROWS = 20_000
#: Cells the two-way view counts at most per table (rows x pairs): a wide table's sample is
#: smaller (at least :data:`MIN_PAIR_ROWS` rows), so that its time grows with the columns,
#: not with their square (150 columns: 11,175 pairs, 5,000 rows).
PAIR_BUDGET = 60_000_000
MIN_PAIR_ROWS = 5_000
#: Pairs named in the report's table of the pairs that moved most.
WORST_PAIRS = 10
_SEED = 1


@dataclass
class PairView:
    """What :func:`pair_view` measured.

    Attributes
    ----------
    names : list of str
        The columns, in report order.
    cells : list of list of str
        Each column's coarse cells.
    tv, tv_shuffled, tv_uniform, v_original, v_release : ndarray
        Per pair ``(i, j)`` with ``i < j``, in the order of :attr:`index`.
    tv_resampled : ndarray
        Per pair, the TV of a resample of the real rows at the release's size (NaN for a
        pair whose real association is below :func:`pair_view`'s ``dependence``).
    r_original, r_release : ndarray
        Pearson's r of numeric pairs (NaN for other pairs).
    index : ndarray of int, shape (n_pairs, 2)
        The column positions of each pair.
    joints : dict
        ``(i, j) -> (real shares, released shares)`` of the pairs that moved most.
    n_rows : tuple of int
        The rows counted of the original and of the release.
    """

    names: list[str]
    cells: list[list[str]]
    index: NDArray[np.int64]
    tv: NDArray[np.float64]
    tv_shuffled: NDArray[np.float64]
    tv_uniform: NDArray[np.float64]
    v_original: NDArray[np.float64]
    v_release: NDArray[np.float64]
    r_original: NDArray[np.float64]
    r_release: NDArray[np.float64]
    joints: dict[tuple[int, int], tuple[NDArray[np.float64], NDArray[np.float64]]]
    n_rows: tuple[int, int]
    tv_resampled: NDArray[np.float64]

    def association(self, which: str) -> NDArray[np.float64]:
        """Per pair: Pearson's |r| for two numeric columns, else Cramér's V (corrected)."""
        v = self.v_original if which == "original" else self.v_release
        r = self.r_original if which == "original" else self.r_release
        return np.where(np.isnan(r), v, np.abs(np.nan_to_num(r)))

    def worst(self, k: int = WORST_PAIRS) -> list[int]:
        """Positions of the ``k`` pairs whose joint distribution moved most (largest TV)."""
        order = np.argsort(-self.tv, kind="stable")
        return [int(i) for i in order[:k]]


def _coarse_numeric(edges: NDArray[np.float64]) -> NDArray[np.float64]:
    """``edges`` merged into at most :data:`PAIR_CELLS` runs of whole bins."""
    bins = edges.size - 1
    step = math.ceil(bins / PAIR_CELLS)
    return np.r_[edges[:-1:step], edges[-1]]


def _cells(
    col: NumericColumn | CategoricalColumn, values: Any
) -> tuple[list[str], Any, NDArray[np.float64]]:
    """The coarse cells of a column, a function mapping a Series to cell codes (-1:
    missing or undeclared, left out of the pair's counts), and the cells' shares under the
    trivial release (values uniform within the bounds, on the column's scale, or the
    categories)."""
    from ppdp.data.dates import day_text

    if isinstance(col, NumericColumn):
        edges = _coarse_numeric(histogram_edges(col))
        text = day_text if col.date else (lambda v: f"{v:g}")
        labels = [f"{text(edges[i])}–{text(edges[i + 1])}" for i in range(edges.size - 1)]

        def code_num(s: pd.Series, name: str) -> NDArray[np.int64]:
            v = _numeric(name, col, s)
            c = np.searchsorted(edges, np.clip(v, col.lower, col.upper), side="right") - 1
            c = np.clip(c, 0, edges.size - 2)
            return np.where(np.isfinite(v), c, -1).astype(np.int64)

        return labels, code_num, np.diff(col.to_unit(edges))
    cats = [str(c) for c in col.categories]
    if len(cats) <= PAIR_CELLS:
        uniform = np.full(len(cats), 1.0 / len(cats))
        return cats, lambda s, name: _codes(s, cats).astype(np.int64), uniform
    counts = np.bincount(values[values >= 0], minlength=len(cats))
    top = np.argsort(-counts, kind="stable")[: PAIR_CELLS - 1]
    lookup = np.full(len(cats), PAIR_CELLS - 1, dtype=np.int64)
    lookup[top] = np.arange(top.size)
    labels = [cats[t] for t in top] + ["(other)"]

    def code_cat(s: pd.Series, name: str) -> NDArray[np.int64]:
        c = _codes(s, cats)
        return np.where(c >= 0, lookup[np.maximum(c, 0)], -1).astype(np.int64)

    uniform = np.r_[np.full(top.size, 1.0), len(cats) - top.size] / len(cats)
    return labels, code_cat, uniform


def _code_matrix(
    df: pd.DataFrame, coders: list[Any], names: list[str], name: str
) -> NDArray[np.int64]:
    """Every column's cell codes, column-major, a missing or undeclared value (-1) as the
    extra cell :data:`PAIR_CELLS`."""
    codes = np.column_stack([f(df[n], name) for f, n in zip(coders, names, strict=True)])
    return np.asfortranarray(np.where(codes < 0, PAIR_CELLS, codes).astype(np.int64))


def pair_tables(codes: NDArray[np.int64], i: int, k: int) -> NDArray[np.int64]:
    """Joint counts of column ``i`` with every later column: shape (m - i - 1, k, k).

    ``codes`` is column-major with -1 already mapped to the extra cell ``k`` (cut off
    here), so one flat :func:`numpy.bincount` counts every pair without a mask.
    """
    kk = k + 1
    b = codes[:, i + 1 :]
    m = b.shape[1]
    flat = b + codes[:, i : i + 1] * kk
    flat += (np.arange(m, dtype=np.int64) * kk * kk)[None, :]
    out = np.bincount(flat.ravel(order="K"), minlength=m * kk * kk)
    return out.reshape(m, kk, kk)[:, :k, :k]


def corrected_v(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bias-corrected Cramér's V (Bergsma 2013) of contingency tables, shape (..., r, c).

    ``φ² = χ²/n`` less its expectation under independence ``(r-1)(c-1)/(n-1)`` (floored at
    0), over ``min(r̃, c̃) - 1`` with ``r̃ = r - (r-1)²/(n-1)``; r and c count the rows and
    columns that occur. 0 when either column has a single cell that occurs.
    """
    t = np.asarray(table, dtype=np.float64)
    n = t.sum(axis=(-2, -1))
    rows, cols = t.sum(axis=-1), t.sum(axis=-2)
    r = (rows > 0).sum(axis=-1).astype(np.float64)
    c = (cols > 0).sum(axis=-1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
        chi2 = np.where(expected > 0, (t - expected) ** 2 / expected, 0.0).sum(axis=(-2, -1))
        phi2 = np.maximum(0.0, chi2 / n - (r - 1) * (c - 1) / (n - 1))
        rc = r - (r - 1) ** 2 / (n - 1)
        cc = c - (c - 1) ** 2 / (n - 1)
        denom = np.minimum(rc, cc) - 1
        v = np.sqrt(phi2 / denom)
    ok = (n > 1) & (r > 1) & (c > 1) & (denom > 0)
    return np.where(ok, np.minimum(v, 1.0), 0.0)


def _tv_pairs(p: NDArray[np.int64], q: NDArray[np.int64]) -> NDArray[np.float64]:
    """TV distance of each pair's joint shares, shapes (m, k, k)."""
    ps = p / np.maximum(p.sum(axis=(1, 2), keepdims=True), 1)
    qs = q / np.maximum(q.sum(axis=(1, 2), keepdims=True), 1)
    return 0.5 * np.abs(ps - qs).sum(axis=(1, 2))  # type: ignore[no-any-return]


def _pearson(X: NDArray[np.float64]) -> NDArray[np.float64]:
    ok = np.isfinite(X)
    Z = np.where(ok, X, np.nanmean(np.where(ok, X, np.nan), axis=0) if X.size else 0.0)
    sd = Z.std(axis=0)
    live = sd > 1e-12
    Z = np.where(live, (Z - Z.mean(axis=0)) / np.where(live, sd, 1.0), 0.0)
    return np.clip((Z.T @ Z) / max(len(Z), 1), -1.0, 1.0)


def pair_view(
    original: pd.DataFrame,
    release: pd.DataFrame,
    cols: list[NumericColumn | CategoricalColumn],
    *,
    keep_joints: int = WORST_PAIRS,
    dependence: float = 0.0,
) -> PairView:
    """Measure every pair of ``cols`` in the original and the release (see the module).

    Parameters
    ----------
    original, release : DataFrame
        The two tables (every name of ``cols``), missing-value tokens already masked.
    cols : list of columns
        The report's columns (features, then the label).
    keep_joints : int
        How many of the pairs that moved most keep their joint shares (for the figures).
    dependence : float, default 0.0
        The pairs whose real association reaches this get ``tv_resampled``.

    Returns
    -------
    PairView
    """
    rng = np.random.default_rng(_SEED)
    n_pairs = len(cols) * (len(cols) - 1) // 2
    cap = max(MIN_PAIR_ROWS, min(PAIR_ROWS, PAIR_BUDGET // max(n_pairs, 1)))
    orig = original.iloc[_pick(len(original), rng, cap)]
    rel = release.iloc[_pick(len(release), rng, cap)]
    names = [c.name for c in cols]
    cells, coders, uniforms = [], [], []
    for col in cols:
        base = (
            _codes(orig[col.name], [str(x) for x in col.categories])
            if isinstance(col, CategoricalColumn)
            else None
        )
        labels, coder, u = _cells(col, base)
        cells.append(labels)
        coders.append(coder)
        uniforms.append(np.pad(u, (0, PAIR_CELLS - u.size)))
    k = PAIR_CELLS
    c0 = _code_matrix(orig, coders, names, "original")
    c1 = _code_matrix(rel, coders, names, "release")
    # Each column drawn on its own, with replacement, as many rows as the release has: the
    # real marginals with the sampling noise of a table of the release's size.
    n1 = c1.shape[0]
    shuffled = np.asfortranarray(
        np.column_stack([c0[rng.integers(0, len(c0), n1), j] for j in range(c0.shape[1])])
    )
    m = len(cols)
    idx, tv, tvs, tvu, v0, v1 = [], [], [], [], [], []
    joints: dict[tuple[int, int], tuple[Any, Any]] = {}
    kept: list[tuple[NDArray[np.int64], NDArray[np.int64]]] = []
    for i in range(m - 1):
        p = pair_tables(c0, i, k)
        q = pair_tables(c1, i, k)
        s = pair_tables(shuffled, i, k)
        idx.extend((i, j) for j in range(i + 1, m))
        tv.append(_tv_pairs(p, q))
        tvs.append(_tv_pairs(p, s))
        u = uniforms[i][None, :k, None] * np.stack(uniforms[i + 1 :])[:, None, :k]
        ps = p / np.maximum(p.sum(axis=(1, 2), keepdims=True), 1)
        tvu.append(0.5 * np.abs(ps - u).sum(axis=(1, 2)))
        v0.append(corrected_v(p))
        v1.append(corrected_v(q))
        kept.append((p, q))
    index = np.asarray(idx, dtype=np.int64).reshape(-1, 2)
    tv_all = np.concatenate(tv) if tv else np.zeros(0)
    numeric = [i for i, c in enumerate(cols) if isinstance(c, NumericColumn)]
    r0 = np.full(index.shape[0], np.nan)
    r1 = np.full(index.shape[0], np.nan)
    if len(numeric) > 1:
        unit = {}
        for name, df in (("original", orig), ("release", rel)):
            unit[name] = np.column_stack(
                [cols[i].to_unit(_numeric(name, cols[i], df[names[i]])) for i in numeric]  # type: ignore[union-attr]
            )
        R0, R1 = _pearson(unit["original"]), _pearson(unit["release"])
        pos = {c: n for n, c in enumerate(numeric)}
        both = np.isin(index[:, 0], numeric) & np.isin(index[:, 1], numeric)
        for t in np.flatnonzero(both):
            a, b = pos[int(index[t, 0])], pos[int(index[t, 1])]
            r0[t], r1[t] = R0[a, b], R1[a, b]
    a0 = np.where(np.isnan(r0), np.concatenate(v0) if v0 else r0, np.abs(np.nan_to_num(r0)))
    # Rows kept whole, with replacement, at the release's size: the real pairs with the
    # sampling noise of a release of that size (drawn after the shuffled baseline).
    resample = c0[rng.integers(0, len(c0), n1)] if len(c0) else c0
    tv_res = np.full(index.shape[0], np.nan)
    for t in np.flatnonzero(a0 >= dependence):
        i, j = (int(x) for x in index[t])
        tv_res[t] = _tv_pairs(kept[i][0][j - i - 1][None], _pair_counts(resample, i, j, k))[0]
    order = np.argsort(-tv_all, kind="stable")[:keep_joints]
    for t in order:
        i, j = (int(x) for x in index[t])
        p, q = kept[i]
        ka, kb = len(cells[i]), len(cells[j])
        pj, qj = p[j - i - 1][:ka, :kb], q[j - i - 1][:ka, :kb]
        joints[(i, j)] = (pj / max(int(pj.sum()), 1), qj / max(int(qj.sum()), 1))
    return PairView(
        names=names,
        cells=cells,
        index=index,
        tv=tv_all,
        tv_shuffled=np.concatenate(tvs) if tvs else np.zeros(0),
        tv_uniform=np.concatenate(tvu) if tvu else np.zeros(0),
        v_original=np.concatenate(v0) if v0 else np.zeros(0),
        v_release=np.concatenate(v1) if v1 else np.zeros(0),
        r_original=r0,
        r_release=r1,
        joints=joints,
        n_rows=(len(orig), len(rel)),
        tv_resampled=tv_res,
    )


def _pair_counts(codes: NDArray[np.int64], i: int, j: int, k: int) -> NDArray[np.int64]:
    """Joint counts of columns ``i`` and ``j``, shape (1, k, k) (as :func:`pair_tables`)."""
    kk = k + 1
    flat = codes[:, i] * kk + codes[:, j]
    return np.bincount(flat, minlength=kk * kk).reshape(1, kk, kk)[:, :k, :k]


def _pick(n: int, rng: np.random.Generator, cap: int) -> NDArray[np.int64]:
    if n <= cap:
        return np.arange(n)
    return np.sort(rng.choice(n, cap, replace=False))


def _r(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def pair_summary(pv: PairView, strong: float, kept: float) -> dict[str, Any]:
    """The two-way view as JSON-ready numbers: the means, the strong pairs and whether the
    release kept each, and the pairs that moved most with their joint shares.

    Parameters
    ----------
    pv : PairView
        What :func:`pair_view` measured.
    strong : float
        A pair is *strong* when its real association reaches this.
    kept : float
        A strong pair is *lost* when the release keeps less than this share of it (a
        correlation of the opposite sign keeps a negative share).

    Returns
    -------
    dict
    """
    a0, a1 = pv.association("original"), pv.association("release")
    signed0 = np.where(np.isnan(pv.r_original), pv.v_original, pv.r_original)
    signed1 = np.where(np.isnan(pv.r_release), pv.v_release, pv.r_release)
    strong_pairs = []
    for t in np.flatnonzero(a0 >= strong):
        share = float(signed1[t] / signed0[t]) if signed0[t] else 1.0
        i, j = (int(x) for x in pv.index[t])
        strong_pairs.append(
            {
                "columns": [pv.names[i], pv.names[j]],
                "measure": "Cramér's V" if np.isnan(pv.r_original[t]) else "Pearson's r",
                "original": float(signed0[t]),
                "release": float(signed1[t]),
                "kept": share,
                "lost": share < kept,
            }
        )
    strong_pairs.sort(key=lambda d: d["kept"])
    worst = []
    for t in pv.worst():
        i, j = (int(x) for x in pv.index[t])
        entry: dict[str, Any] = {
            "columns": [pv.names[i], pv.names[j]],
            "tv": float(pv.tv[t]),
            "tv_shuffled": float(pv.tv_shuffled[t]),
            "v_original": float(pv.v_original[t]),
            "v_release": float(pv.v_release[t]),
            "r_original": _r(pv.r_original[t]),
            "r_release": _r(pv.r_release[t]),
            "cells": [pv.cells[i], pv.cells[j]],
        }
        if (i, j) in pv.joints:
            p, q = pv.joints[(i, j)]
            entry["original"] = np.round(p, 5).tolist()
            entry["release"] = np.round(q, 5).tolist()
        worst.append(entry)
    n = int(pv.tv.size)
    dep = np.isfinite(pv.tv_resampled)
    return {
        "n_pairs": n,
        "n_rows": list(pv.n_rows),
        "cells_per_column": PAIR_CELLS,
        "mean_tv": float(pv.tv.mean()) if n else 0.0,
        "mean_tv_shuffled": float(pv.tv_shuffled.mean()) if n else 0.0,
        "mean_tv_uniform": float(pv.tv_uniform.mean()) if n else 0.0,
        "max_association": float(a0.max()) if n else 0.0,
        # the pairs with a real dependence: the release against the shuffled baseline and
        # against a resample of the real rows at its size (a perfect release)
        "n_dependent": int(dep.sum()),
        "dependent_tv": float(pv.tv[dep].mean()) if dep.any() else 0.0,
        "dependent_tv_shuffled": float(pv.tv_shuffled[dep].mean()) if dep.any() else 0.0,
        "dependent_tv_resampled": float(pv.tv_resampled[dep].mean()) if dep.any() else 0.0,
        "mean_association_drift": float(np.abs(a1 - a0).mean()) if n else 0.0,
        "strong": strong_pairs,
        "worst": worst,
    }
