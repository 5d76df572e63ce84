"""The report's histogram of a numeric column follows its declared ``cuts``.

A column with public cut points is binned at ``[lower, *cuts, upper]`` (one bin per
interval, a value equal to a cut in the bin above); a column without them keeps the 20
equal-width bins over its bounds, number for number.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.evaluate.report import N_BINS, column_counts, histogram_edges, quality_report

BRACKETS = [2500.0 * 2**k for k in range(7)]  # 2500, 5000, ..., 160000


def _schema(numeric: dict) -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"type": "numeric", **numeric},
                {"name": "g", "type": "categorical", "categories": ["a", "b"]},
            ]
        }
    )


def _entry(report, name: str) -> dict:
    return next(c for c in report.columns if c["name"] == name)


def test_counts_and_cells_use_the_declared_edges():
    col = NumericColumn("x", 0.0, 100.0, cuts=(10.0, 50.0))
    values = [0.0, 5.0, 10.0, 49.9, 50.0, 100.0, 150.0, -3.0, np.nan]
    df = pd.DataFrame({"x": values})
    counts = column_counts(df, [col], "original")["x"]
    # [0, 10): 0, 5, -3 (clipped); [10, 50): 10 (a cut goes up), 49.9; [50, 100]: 50, 100,
    # 150 (clipped); then 2 at the lower bound, 2 at the upper, 8 finite values.
    assert counts.tolist() == [3, 2, 3, 2, 2, 8]
    assert histogram_edges(col).tolist() == [0.0, 10.0, 50.0, 100.0]

    schema = _schema({"name": "x", "lower": 0, "upper": 100, "cuts": [10, 50]})
    frame = df.assign(g=["a", "b"] * 4 + ["a"])
    report = quality_report(frame, frame.iloc[::-1].reset_index(drop=True), schema)
    entry = _entry(report, "x")
    assert entry["cells"] == ["0–10", "10–50", "50–100"]
    assert entry["p_original"].tolist() == pytest.approx([3 / 8, 2 / 8, 3 / 8])
    assert entry["edges"] == [0.0, 10.0, 50.0, 100.0]
    assert entry["original_at_lower"] == pytest.approx(2 / 8)
    assert entry["original_at_upper"] == pytest.approx(2 / 8)
    # Trivial release: uniform values within the bounds, so shares by interval width.
    assert entry["tv_uniform"] == pytest.approx(0.5 * (0.275 + 0.15 + 0.125))
    json.dumps(report.to_dict())  # the edges are JSON-safe
    html = report.to_html()
    assert ">10–50</text>" in html  # one labelled slot per interval
    assert "or of the intervals between" in html


def _skewed(seed: int = 3, n: int = 4000) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    income = np.clip(rng.lognormal(np.log(8_000), 0.8, n), 0, 1e6)
    g = rng.choice(["a", "b"], n)
    real = pd.DataFrame({"income": income, "g": g})
    # Shifted within the first equal-width bin [0, 50000) for most rows.
    release = pd.DataFrame({"income": np.clip(income * 1.8, 0, 1e6), "g": g})
    return real, release


def test_cuts_let_the_report_see_a_shift_within_the_first_equal_bin():
    real, release = _skewed()
    plain = _schema({"name": "income", "lower": 0, "upper": 1e6})
    cut = _schema({"name": "income", "lower": 0, "upper": 1e6, "cuts": BRACKETS})
    tv_plain = _entry(quality_report(real, release, plain), "income")["tv"]
    tv_cut = _entry(quality_report(real, release, cut), "income")["tv"]
    assert tv_plain < 0.08  # 20 equal bins: the shift hides in the first bin
    assert tv_cut > 0.20
    assert tv_cut > 4 * tv_plain


def test_the_partitioned_path_counts_a_cut_column_as_in_memory(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    from ppdp.data.distributed import write_parquet_dataset
    from ppdp.evaluate.parquet_report import dataset_report

    real, release = _skewed(seed=8, n=900)
    schema = _schema({"name": "income", "lower": 0, "upper": 1e6, "cuts": BRACKETS})
    (tmp_path / "ds").mkdir()
    for i, (a, b) in enumerate([(0, 250), (250, 600), (600, 900)]):
        real.iloc[a:b].to_parquet(tmp_path / "ds" / f"part-{i}.parquet", index=False)
    write_parquet_dataset([release.iloc[:400], release.iloc[400:]], tmp_path / "rel")
    dist = dataset_report(tmp_path / "ds", tmp_path / "rel", schema, scheduler="sync")
    memory = quality_report(real, release, schema)

    def numbers(r) -> str:
        data = r.to_dict()
        data.pop("notes")
        return json.dumps(data, sort_keys=True)

    assert numbers(dist) == numbers(memory)
    entry = _entry(dist, "income")
    assert len(entry["cells"]) == len(BRACKETS) + 1
    whole = column_counts(real, list(schema.columns), "original")["income"]
    shares = whole[: len(BRACKETS) + 1] / len(real)
    assert entry["p_original"] == pytest.approx(shares, abs=1e-12)
    assert whole[-3:].tolist() == [0, 0, len(real)]  # none at a bound, every value finite


def test_a_column_without_cuts_keeps_the_equal_bins():
    rng = np.random.default_rng(1)
    v = np.concatenate([rng.normal(40, 30, 500), [17.0, 90.0, 53.5, -1.0, 200.0]])
    col = NumericColumn("age", 17.0, 90.0)
    counts = column_counts(pd.DataFrame({"age": v}), [col], "original")["age"]
    want, _ = np.histogram(np.clip(v, 17.0, 90.0), np.linspace(17.0, 90.0, N_BINS + 1))
    assert counts.size == N_BINS + 3
    assert counts[:N_BINS].tobytes() == want.astype(np.int64).tobytes()
    assert np.array_equal(histogram_edges(col), np.linspace(17.0, 90.0, N_BINS + 1))

    schema = _schema({"name": "age", "lower": 17, "upper": 90})
    df = pd.DataFrame({"age": v, "g": ["a"] * v.size})
    entry = _entry(quality_report(df, df, schema), "age")
    assert "edges" not in entry
    assert len(entry["cells"]) == N_BINS and entry["cells"][0] == "17–20.65"
    assert entry["tv_uniform"] == pytest.approx(0.5 * np.abs(want / want.sum() - 1 / N_BINS).sum())
