"""The report leaves the original's missing values out of its shares (they are not
undeclared values), reads the schema's missing-value tokens as missing, and says so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.evaluate.report import NOT_JUDGED, quality_report

SCHEMA = {
    "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 10, "impute": 5},
        {"name": "c", "type": "categorical", "categories": ["a", "b"], "impute": "a"},
    ],
    "nan_policy": "impute",
}


def _tables(missing, token_schema: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    n = 400
    c = np.where(rng.random(n) < 0.5, "a", "b").astype(object)
    c[: n // 4] = missing  # a quarter of 'c' is missing
    x = rng.uniform(0, 10, n).round(1).astype(object)
    x[:10] = missing
    original = pd.DataFrame({"x": x, "c": c})
    release = pd.DataFrame(
        {"x": rng.uniform(0, 10, n).round(1), "c": np.where(rng.random(n) < 0.5, "a", "b")}
    )
    spec = {**SCHEMA, "missing_values": ["?"]} if token_schema else SCHEMA
    return original, release, Schema.from_dict(spec)


@pytest.mark.parametrize(("missing", "tokens"), [(np.nan, False), ("?", True)])
def test_missing_values_are_left_out_of_the_shares_and_noted(missing, tokens):
    original, release, schema = _tables(missing, tokens)
    report = quality_report(original, release, schema)
    assert report.verdict != NOT_JUDGED
    col = next(c for c in report.columns if c["name"] == "c")
    assert col["cells"] == ["a", "b"]  # no "(undeclared)" cell for the missing quarter
    present = original["c"].iloc[100:]
    expected = [float(np.mean(present == "a")), float(np.mean(present == "b"))]
    assert np.allclose(col["p_original"], expected)
    (note,) = [n for n in report.notes if "missing values" in n]
    assert note.startswith(
        "the original has missing values, left out of its shares: 'x' 2.5%, 'c' 25.0%"
    )


def test_undeclared_values_still_withhold_the_verdict():
    original, release, schema = _tables("z")  # a quarter of 'c' is an undeclared value
    original["x"] = original["x"].replace("z", 1.0).astype(float)
    report = quality_report(original, release, schema)
    assert report.verdict == NOT_JUDGED
    assert "25% of the original's values in column 'c' are not declared" in report.verdict_basis
    assert not any("missing values" in n for n in report.notes)
