"""The report of a group-by release (``ppdp publish groupby``): :func:`group_report`.

A group-by release holds one row per group: the ``by`` keys, a noisy ``count`` and, per
column, ``mean_x``, ``var_x``, ``std_x`` with their intervals (``_lo``/``_hi``) and
quantiles ``p50_x``. The report compares each released statistic with its true value on
the rows the release read:

* the rows are the original's after the release's contribution bounding
  (:func:`ppdp.evaluate.group_bounding.bounded_rows`: the guarantee's caps, one draw with
  the report's own keys, since the release's are secret); the report's bounding block
  gives the rows each cap dropped;
* the true values are the release's own post-processing of the exact statistics of those
  rows, without noise (:func:`ppdp.publish.groupby.keyed_statistics`,
  :meth:`~ppdp.publish.groupby.GroupByPublisher.noiseless_table`); a true quantile is the
  first point of the release's quantile grid where the group's cumulative count reaches
  ``p·n`` (where the exponential mechanism's utility peaks);
* per statistic, over the released groups: the median and largest absolute error, the
  median of the trivial release's (values uniform within the declared bounds, the same
  count in every group), and the share of groups whose stated interval covers the true
  value.

Where a cap drops rows that the draw chooses, the true values are "about" (one draw); where
no cap drops a row they are the release's own. With private keys the report counts the
keys in the data and the released ones (counts only: a key that was not released is never
named). The report reads the private data: custodian only, not private, costs no budget.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

__all__ = ["group_report"]

_ABOUT = (
    "one draw of the release's bounding with the report's own keys (the release's are "
    "secret), where a cap chose which rows to drop"
)
_QUANTILE = re.compile(r"^p(\d+(?:\.\d+)?)_(.+)$")


def group_report(
    original: pd.DataFrame,
    release: pd.DataFrame,
    schema: Schema,
    sidecar: dict[str, Any],
) -> Any:
    """How close a group-by release's statistics are to the true ones (custodian only).

    Parameters
    ----------
    original : DataFrame
        The private table the release was made from (the schema's columns and, under a
        privacy unit, its id column).
    release : DataFrame
        The released table: the ``by`` columns, ``count`` and the statistics' columns.
    schema : Schema
        The schema the release was published with.
    sidecar : dict
        The release's ``.guarantee.json`` (its guarantee states ``by``, ``means``, the caps
        and the keys).

    Returns
    -------
    QualityReport
        ``kind == "groupby"``: ``groups`` holds each statistic's errors and the keys'
        counts, ``bounding`` what each cap dropped (under a privacy unit).
    """
    from ppdp.evaluate import report as rp
    from ppdp.evaluate.group_bounding import release_plan

    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    g, info = rp._guarantee(sidecar)
    if g is None or not isinstance(g.details.get("by"), list) or "means" not in g.details:
        raise ParameterError(
            "the release's guarantee file is not a group-by release's (it states no 'by' and "
            "'means'): give the guarantee file ppdp publish groupby wrote beside the release"
        )
    for name, table in (("original", original), ("release", release)):
        if not isinstance(table, pd.DataFrame):
            raise ParameterTypeError(f"{name} ({type(table).__name__}) must be a pandas DataFrame")
    by, means = [str(b) for b in g.details["by"]], [str(m) for m in g.details["means"]]
    stats, variances, quantiles = _statistics(release, by, means, schema)
    qnames = sorted({name for _, name in quantiles})
    qs = sorted({p for p, _ in quantiles}) or [0.5]
    publisher = release_plan(schema, g, variances=variances, quantiles=qnames, q=qs)
    plan = publisher.plan()
    rp._check_table("original", original, schema, exact=False)  # one line on a mismatch
    bounding, rows, counts = _bounded(original, schema, g)
    # the columns the release read only are checked, as the release checked them
    rows, checked = publisher.checked_table(rows), publisher.checked_table(original)
    truth_keys, truth, n_rows = _truth(publisher, plan, schema, rows, quantiles)
    released = _key_index(release[by], by)
    at = _locate(released, truth_keys)
    declared = _key_index(plan.keys(), by)
    data_keys = _data_keys(plan, schema, checked, declared)
    _check_keys(plan, released, declared, data_keys)
    exact_counts = counts is None or (counts.by_groups == 0 and counts.by_rows == 0)
    exact_values = exact_counts and (counts is None or counts.by_rows_per_group == 0)
    level = g.details.get("interval")
    entries = [
        _entry(stat, release, _true_column(truth, stat, at), schema, level)
        | {"exact": exact_counts if stat == "count" else exact_values}
        for stat in stats
    ]
    groups = {
        "by": by,
        "statistics": entries,
        "keys": _keys_block(plan, released, declared, data_keys, truth, at, n_rows)
        | {"exact": exact_counts},
        "interval": level,
        "exact": exact_values,
        "truth": "the release's rows exactly (no cap chose a row)" if exact_values else _ABOUT,
    }
    verdict, basis, parts = _verdict(entries)
    notes = (
        []
        if exact_values
        else [
            f"the true values are about: {_ABOUT}; the errors then include the difference "
            "between the release's draw and the report's, and an interval may miss the report's "
            "true value for that reason alone (its coverage can fall below the nominal level)"
        ]
    )
    return rp.QualityReport(
        verdict=verdict,
        verdict_basis=basis,
        n_original=len(original),
        n_release=len(release),
        columns=[],
        feature_names=[],
        corr_original=np.zeros((0, 0)),
        corr_release=np.zeros((0, 0)),
        ml=None,
        guarantee=g,
        release_info=info,
        notes=notes,
        kind="groupby",
        verdict_parts=parts,
        bounding=bounding,
        groups=groups,
    )


# ---------------------------------------------------------------------------- columns
def _statistics(
    release: pd.DataFrame, by: list[str], means: list[str], schema: Schema
) -> tuple[list[str], list[str], list[tuple[float, str]]]:
    """The released statistics (``count``, ``mean_x``, ``var_x``, ``std_x``, ``p50_x``),
    the variance columns and the quantiles ``(p, column)``; a column that a group-by
    release of this guarantee does not write is refused."""
    have = [str(c) for c in release.columns]
    missing = [c for c in [*by, "count"] if c not in have]
    if missing:
        raise DataValidationError(
            f"the release's columns ({', '.join(have[:6])}) are not a group-by release's: it "
            f"lacks {', '.join(map(repr, missing))}; give the release ppdp publish groupby "
            "wrote with this guarantee file"
        )
    numeric = {c.name for c in schema.numeric_columns}
    stats, variances, quantiles, unknown = ["count"], [], [], []
    for c in have:
        if c in by or c in ("count", "count_lo", "count_hi"):
            continue
        base = c[: -len("_lo")] if c.endswith(("_lo", "_hi")) else c
        kind, _, column = base.partition("_")
        q = _QUANTILE.match(base)
        if base.endswith("_sd") and base[:-3].partition("_")[2] in means and kind == "mean":
            continue
        if kind in ("mean", "var", "std") and column in means:
            if base == c and c not in stats:
                stats.append(c)
            if kind == "var" and column not in variances:
                variances.append(column)
        elif q is not None and q.group(2) in numeric and 0 < float(q.group(1)) < 100:
            if base == c:  # the interval ends (``_lo``/``_hi``) are read with their statistic
                stats.append(c)
                quantiles.append((float(q.group(1)) / 100.0, q.group(2)))
        else:
            unknown.append(c)
    if unknown:
        raise DataValidationError(
            f"the release has column(s) {', '.join(map(repr, unknown[:5]))} that a group-by "
            f"release of ({', '.join(by) or 'whole table'}) with means of "
            f"({', '.join(means) or 'none'}) does not write: give the release its guarantee "
            "file describes"
        )
    for c in stats:
        values = pd.to_numeric(release[c], errors="coerce")
        bad = values.isna() & release[c].notna()
        if bad.any():
            raise DataValidationError(
                f"the release's column {c!r} holds {release[c][bad].iloc[0]!r}, not a number"
            )
    return stats, variances, quantiles


def _key_texts(values: pd.Series) -> list[str]:
    """Each key as text, an integral number as an integer (``1``, not ``1.0``): a CSV may
    read a column of codes as floats, and the declared levels may be numbers."""

    def text(v: Any) -> str:
        if isinstance(v, float | np.floating) and np.isfinite(v) and float(v).is_integer():
            return str(int(v))
        return str(v)

    return [text(v) for v in values.tolist()]


def _key_index(frame: pd.DataFrame, by: list[str]) -> pd.Index:
    """The keys of ``frame``'s rows as texts: a MultiIndex over ``by`` (one key for the
    whole table when ``by`` is empty)."""
    if not by:
        return pd.Index(["(whole table)"] * len(frame))
    return pd.MultiIndex.from_arrays([_key_texts(frame[b]) for b in by], names=by)


def _locate(released: pd.Index, truth: pd.Index) -> NDArray[np.int64]:
    """Each released key's row of the true table, -1 for a key no bounded row holds."""
    if released.duplicated().any():
        raise DataValidationError(
            "the release holds a group twice: it is not a group-by release as ppdp writes it"
        )
    return np.asarray(truth.get_indexer(released), dtype=np.int64)


def _check_keys(plan: Any, released: pd.Index, declared: pd.Index, data: pd.Index) -> None:
    """Every released key is declared, or (private keys) held by the original."""
    allowed = declared if plan.key_mode != "private" else declared.append(data).unique()
    foreign = int((allowed.get_indexer(released) < 0).sum())
    if foreign:
        where = "declared" if plan.key_mode != "private" else "declared nor in the original"
        raise DataValidationError(
            f"{foreign} group(s) of the release are neither {where}: give the original and "
            "the schema the release was made from"
            if plan.key_mode == "private"
            else f"{foreign} group(s) of the release are not {where} in the schema: give the "
            "schema the release was published with"
        )


# ---------------------------------------------------------------------------- truth
def _bounded(original: pd.DataFrame, schema: Schema, g: Any) -> tuple[Any, pd.DataFrame, Any]:
    """The bounding block, the rows the release read (one draw) and the draw's counts;
    ``(None, original, None)`` without a privacy unit."""
    from ppdp.data.contribution import dropped_share
    from ppdp.evaluate.group_bounding import bounded_rows
    from ppdp.evaluate.report import bounding_cap

    unit = schema.privacy_unit
    stated = g.details.get("privacy_unit")
    if (unit is None) != (stated is None):
        which = (
            "no privacy unit but the release states one"
            if unit is None
            else ("a privacy unit but the release states none")
        )
        raise DataValidationError(
            f"the schema declares {which}: give the schema the release was published with"
        )
    if unit is None:
        return None, original, None
    if unit.column not in original.columns:
        raise DataValidationError(
            f"the original lacks column {unit.column!r}, the privacy unit's id column: give "
            "the table the release was made from"
        )
    k = bounding_cap(schema, g)
    assert k is not None  # a GroupBy release under a unit states its max_rows
    block = dropped_share(original[unit.column], unit.column, k)
    return bounded_rows(original, schema, g, block)


def _keyed_rows(plan: Any, schema: Schema, rows: pd.DataFrame) -> tuple[Any, Any]:
    """The rows encoded with their open keys, as the release reads them."""
    from ppdp.data.encoding import encode
    from ppdp.publish.groupby_keys import KeyedRows, open_key_values

    X, y, _ = encode(schema, rows, include_label=False, log=False, on_invalid="raise")
    keys, keep = open_key_values(schema, rows, plan.open_by, "mask")
    return KeyedRows(X, keys, keep), y


def _data_keys(plan: Any, schema: Schema, rows: pd.DataFrame, declared: pd.Index) -> pd.Index:
    """The distinct keys of ``rows``: the declared groups that hold a row, or (private
    keys) every key the rows hold, declared levels and open key texts."""
    from ppdp.publish.groupby import group_codes, row_labels

    keyed, y = _keyed_rows(plan, schema, rows)
    if plan.key_mode != "private":
        return declared[np.unique(group_codes(schema, plan, keyed.X, y))]
    _, labels = row_labels(schema, plan, keyed, y)
    return _key_index(pd.DataFrame({b: labels[b] for b in plan.by}), list(plan.by)).unique()


def _truth(
    publisher: Any,
    plan: Any,
    schema: Schema,
    rows: pd.DataFrame,
    quantiles: list[tuple[float, str]],
) -> tuple[pd.Index, pd.DataFrame, int]:
    """The keys of the true table, the table (the release's post-processing of the exact
    statistics of ``rows``, no noise) and the number of rows with a key. Declared keys:
    every declared group, as the release counts them; private keys: every key the rows
    hold."""
    from ppdp.publish.groupby import GroupStatistics, group_statistics, keyed_statistics

    keyed, y = _keyed_rows(plan, schema, rows)
    if plan.key_mode != "private":
        exact = group_statistics(schema, plan, keyed.X, y)
        keys, cells = plan.keys(), exact.cells
    else:
        agg = keyed_statistics(schema, plan, keyed, y)
        k, v = len(plan.means), len(plan.variances)
        exact = GroupStatistics(agg.stats[0], agg.stats[1 : 1 + k], agg.stats[1 + k : 1 + k + v])
        keys, cells = agg.keys, agg.cells
    table = publisher.noiseless_table(keys, exact)
    for p, name in quantiles:
        col = schema.column(name)
        assert isinstance(col, NumericColumn)
        hist = cells[plan.quantiles.index(name)]
        table[_quantile_name(p, name)] = _true_quantiles(hist, len(table), p, col)
    return _key_index(keys, list(plan.by)), table, int(np.sum(exact.counts))


def _quantile_name(p: float, name: str) -> str:
    return f"p{round(p * 100, 10):g}_{name}"


def _true_quantiles(hist: Any, n_keys: int, p: float, col: NumericColumn) -> NDArray[np.float64]:
    """Each group's ``p``-quantile on the release's grid: the first grid point where the
    cumulative count reaches ``p·n`` (NaN for a group without rows)."""
    from ppdp.publish.group_quantiles import grid_values

    out = np.full(n_keys, np.nan)
    if hist.groups.size == 0:
        return out
    cells = pd.DataFrame({"g": hist.groups, "c": hist.cells, "n": hist.counts})
    cells = cells.sort_values(["g", "c"], kind="mergesort")
    cum = cells.groupby("g")["n"].cumsum()
    total = cells.groupby("g")["n"].transform("sum")
    first = cells[cum >= p * total].groupby("g")["c"].first()
    out[first.index.to_numpy()] = grid_values(first.to_numpy(), col.lower, col.upper)
    return out


def _true_column(truth: pd.DataFrame, stat: str, at: NDArray[np.int64]) -> NDArray[np.float64]:
    """The true value of ``stat`` for each released group: 0 rows (count 0, no mean) for a
    key that no bounded row holds."""
    values = truth[stat].to_numpy(dtype=np.float64)
    empty = 0.0 if stat == "count" else np.nan
    return np.where(at >= 0, values[np.maximum(at, 0)] if len(values) else empty, empty)


# ---------------------------------------------------------------------------- figures
def _trivial(stat: str, true: NDArray[np.float64], schema: Schema) -> NDArray[np.float64]:
    """The trivial release's value: the same count in every released group (the true rows
    over the groups), or the statistic of values uniform within the declared bounds."""
    if stat == "count":
        return np.full(true.shape, float(np.mean(true)) if true.size else 0.0)
    q = _QUANTILE.match(stat)
    name = q.group(2) if q else stat.partition("_")[2]
    col = schema.column(name)
    assert isinstance(col, NumericColumn)
    span = col.upper - col.lower
    if q:
        value = col.lower + float(q.group(1)) / 100.0 * span
    else:
        value = {
            "mean": col.lower + span / 2.0,
            "var": span**2 / 12.0,
            "std": span / np.sqrt(12.0),
        }[stat.partition("_")[0]]
    return np.full(true.shape, value)


def _entry(
    stat: str, release: pd.DataFrame, true: NDArray[np.float64], schema: Schema, level: Any
) -> dict[str, Any]:
    """One statistic's figures over the released groups with a released and a true value."""
    rel = pd.to_numeric(release[stat], errors="coerce").to_numpy(dtype=np.float64)
    ok = np.isfinite(rel) & np.isfinite(true)
    err = np.abs(rel[ok] - true[ok])
    base = np.abs(_trivial(stat, true, schema)[ok] - true[ok])
    entry: dict[str, Any] = {
        "statistic": stat,
        "groups": int(ok.sum()),
        "median_abs_error": float(np.median(err)) if err.size else None,
        "max_abs_error": float(err.max()) if err.size else None,
        "trivial_median_abs_error": float(np.median(base)) if base.size else None,
        "coverage": None,
        "interval_groups": 0,
        "interval": None,
    }
    if f"{stat}_lo" in release.columns and f"{stat}_hi" in release.columns:
        lo = pd.to_numeric(release[f"{stat}_lo"], errors="coerce").to_numpy(dtype=np.float64)
        hi = pd.to_numeric(release[f"{stat}_hi"], errors="coerce").to_numpy(dtype=np.float64)
        live = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(true)
        covered = (lo[live] <= true[live]) & (true[live] <= hi[live])
        entry["interval_groups"] = int(live.sum())
        entry["coverage"] = float(covered.mean()) if covered.size else None
        entry["interval"] = level
    return entry


def _keys_block(
    plan: Any,
    released: pd.Index,
    declared: pd.Index,
    data: pd.Index,
    truth: pd.DataFrame,
    at: NDArray[np.int64],
    n_rows: int,
) -> dict[str, Any]:
    """Keys in the data and released, as counts only (a key that was not released is
    never named)."""
    is_declared = declared.get_indexer(released) >= 0
    kept = truth["count"].to_numpy(dtype=np.float64)[at[at >= 0]].sum() if len(truth) else 0.0
    return {
        "mode": plan.key_mode,
        "declared": len(declared),
        "released": len(released),
        "released_declared": int(is_declared.sum()),
        "released_from_data": int((~is_declared).sum()),
        "in_data": len(data),
        "in_data_declared": int((declared.get_indexer(data) >= 0).sum()),
        "in_data_not_released": int((released.get_indexer(data) < 0).sum()),
        "in_bounded_rows": len(truth),
        "rows_in_released_keys": 0.0 if n_rows == 0 else float(kept) / n_rows,
    }


# ---------------------------------------------------------------------------- verdict
def _verdict(entries: list[dict[str, Any]]) -> tuple[str, str, list[dict[str, str]]]:
    """The worst of the statistics' verdicts: each statistic's median absolute error
    against the trivial release's (:data:`ppdp.evaluate.report.THRESHOLDS`)."""
    from ppdp.evaluate.report import NOT_JUDGED, THRESHOLDS, VERDICTS

    parts = []
    for e in entries:
        if not e["groups"]:
            parts.append(
                {
                    "part": e["statistic"],
                    "verdict": NOT_JUDGED,
                    "basis": "no released group has both a released and a true value",
                }
            )
            continue
        err, base = e["median_abs_error"], e["trivial_median_abs_error"]
        basis = (
            f"median |error| {err:.3g} over {e['groups']:,} group(s), largest "
            f"{e['max_abs_error']:.3g}; the trivial release's median {base:.3g}"
        )
        if e["coverage"] is not None:
            nominal = f"{e['interval']:g} " if e["interval"] is not None else ""
            basis += (
                f"; its {nominal}intervals cover the true value in {e['coverage']:.0%} of "
                f"{e['interval_groups']:,} group(s)"
            )
        if err >= THRESHOLDS["trivial_tv_share"] * base and err > 0:
            verdict = VERDICTS[2]
        elif err <= THRESHOLDS["group_useful_error"] * base:
            verdict = VERDICTS[0]
        else:
            verdict = VERDICTS[1]
        parts.append({"part": e["statistic"], "verdict": verdict, "basis": basis})
    judged = [p for p in parts if p["verdict"] in VERDICTS]
    if not judged:
        return NOT_JUDGED, "no released group could be compared with the original", parts
    worst = max(VERDICTS.index(p["verdict"]) for p in judged)
    ordered = sorted(judged, key=lambda p: -VERDICTS.index(p["verdict"]))
    basis = "; ".join(f"{p['part']}: {p['verdict']} ({p['basis']})" for p in ordered)
    return VERDICTS[worst], basis, parts
