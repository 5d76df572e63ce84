"""A numeric column crowded into one end bin of the report's histogram gets a note."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.evaluate.report import quality_report


def _report(values: np.ndarray, **declared) -> list[str]:
    schema = Schema.from_dict(
        {"columns": [{"name": "v", "type": "numeric", "lower": 0, "upper": 1e6, **declared}]}
    )
    df = pd.DataFrame({"v": values})
    return [n for n in quality_report(df, df, schema).notes if "histogram bins" in n]


RNG = np.random.default_rng(0)
SKEWED = np.clip(RNG.lognormal(10, 0.8, 2000), 0, 1e6)


def test_a_skewed_column_is_noted_with_both_fixes():
    (note,) = _report(SKEWED)
    share = np.mean(SKEWED < 1e6 / 20)
    assert note == (
        f"column 'v': {share:.0%} of the original's values fall in the first of its 20 "
        "histogram bins, so its histogram and TV distance say little about how they spread; "
        "declare 'scale: log' or public cut points ('cuts') in the schema to compare them in "
        "detail"
    )


@pytest.mark.parametrize(
    "declared", [{"cuts": [1e4, 3e4, 1e5]}, {"scale": "log"}], ids=["cuts", "log"]
)
def test_declared_cuts_or_a_log_scale_silence_it(declared):
    assert _report(SKEWED, **declared) == []


def test_a_spread_column_and_a_crowded_top_get_the_right_words():
    assert _report(RNG.uniform(0, 1e6, 2000)) == []
    (note,) = _report(1e6 - SKEWED)
    assert "in the last of its 20 histogram bins" in note and "scale" not in note


def test_a_zero_heavy_column_is_not_noted():
    values = np.where(RNG.random(2000) < 0.9, 0.0, RNG.uniform(1, 1e6, 2000))
    assert _report(values) == []
