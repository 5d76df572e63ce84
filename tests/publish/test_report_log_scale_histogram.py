"""The quality report and the dry run on a ``scale: log`` column."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting.plan import charge_lines
from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.evaluate import report


def test_histogram_edges_of_a_log_column_are_equal_widths_of_its_log_scale():
    col = NumericColumn("income", 0, 1e6, scale="log")
    edges = report.histogram_edges(col)
    assert edges[0] == 0 and edges[-1] == 1e6 and np.all(np.diff(edges) > 0)
    np.testing.assert_allclose(np.diff(col.to_unit(edges)), 1 / report.N_BINS, rtol=1e-9)
    np.testing.assert_allclose(report._uniform(col), 1 / report.N_BINS)
    cut = NumericColumn("income", 0, 1e6, scale="log", cuts=[1000, 100_000])
    assert report.histogram_edges(cut).tolist() == [0, 1000, 100_000, 1e6]
    # trivial release: uniform on the log scale, so [0, 1000) holds half of it
    np.testing.assert_allclose(report._uniform(cut), [0.5, 1 / 3, 1 / 6], atol=1e-4)
    linear = NumericColumn("income", 0, 1e6, cuts=[1000, 100_000])
    np.testing.assert_allclose(report._uniform(linear), [0.001, 0.099, 0.9])


def test_the_reports_features_are_the_log_encoding():
    col = NumericColumn("income", 0, 1e6, scale="log")
    df = pd.DataFrame({"income": [0.0, 999.0, 1e6, 5e6, np.nan]})
    X, names = report._encode(df, [col], "original")
    assert names == ["income"]
    np.testing.assert_allclose(X[:, 0], [0.0, col.to_unit(999.0), 1.0, 1.0, 0.5])


def test_dry_run_states_a_log_columns_noise_as_a_factor():
    schema = Schema(
        columns=(NumericColumn("income", 0, 1e6, scale="log"), NumericColumn("age", 0, 100))
    )
    charge = SimpleNamespace(
        budget=PrivacyBudget(1.0), mechanism="laplace", details={"noise_scale": 0.1}
    )
    lines = charge_lines([charge], schema=schema, per_value=True)
    text = "\n".join(lines)
    e = 0.1 * np.log1p(1e6)
    assert f"income (scale log): b x log1p(declared range 1e+06) = {e:.4g}" in text
    assert f"a factor of about {np.exp(e):.4g} on 1 + value - lower" in text
    assert "age: b x declared range 100 = 10 expected absolute error" in text
    assert "b x declared range 1e+06" not in text


@pytest.mark.parametrize("scale", ["linear", "log"])
def test_column_counts_follow_the_histogram_edges(scale):
    col = NumericColumn("income", 0, 1e6, scale=scale)
    v = np.random.default_rng(0).lognormal(10, 1, 4000)
    counts = report.column_counts(pd.DataFrame({"income": v}), [col], "original")["income"]
    expected, _ = np.histogram(np.clip(v, 0, 1e6), bins=report.histogram_edges(col))
    assert counts[: report.N_BINS].tolist() == expected.tolist()
    # a lognormal income fills many log bins, but only the first few linear ones
    assert np.count_nonzero(expected) >= (8 if scale == "log" else 1)


def test_the_html_draws_a_log_column_on_its_log_scale():
    """Bars at equal widths, ticks at the bound plus powers of ten (they were drawn at
    equal widths of a linear axis, which put a 30,000 median near 750,000)."""
    import re

    from ppdp.evaluate._report_html import _marginal_svg

    schema = Schema.from_dict(
        {"columns": [{"name": "v", "type": "numeric", "lower": 0, "upper": 1e6, "scale": "log"}]}
    )
    df = pd.DataFrame({"v": np.random.default_rng(0).lognormal(10.3, 0.8, 3000)})
    entry = next(c for c in report.quality_report(df, df, schema).columns if c["name"] == "v")
    assert np.allclose(entry["log_edges"], report.histogram_edges(schema.column("v")))
    svg = _marginal_svg(entry)
    ticks = re.findall(r'text-anchor="middle">([^<]*)</text>', svg)
    assert ticks[:3] == ["0", "1", "10"] and "10000" in ticks and "100000" in ticks
    bars = re.findall(r'<rect x="[^"]*" y="[^"]*" width="([^"]*)"[^>]*fill-opacity="0.45"', svg)
    assert len(bars) > 5 and len({round(float(w), 1) for w in bars}) == 1  # equal widths
