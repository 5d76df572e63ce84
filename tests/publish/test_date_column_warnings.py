"""Custodian-side warnings name a date column's bounds as dates, and never advise a log scale
(which a date column refuses)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ppdp.data import Schema
from ppdp.publish.files import warn_clipping, warn_crowded_features

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "seen", "type": "numeric", "date": True, "lower": "2000-01-01",
             "upper": "2024-12-31"},
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        ]
    }
)  # fmt: skip


def test_a_clipped_date_column_names_its_bounds_as_dates():
    said: list[str] = []
    report = SimpleNamespace(n_rows=100, clipped={"seen": 30, "age": 30})
    warn_clipping(SCHEMA, report, said.append)
    assert any("[2000-01-01, 2024-12-31] and were clipped" in line for line in said), said
    assert any("'age'" in line and "[0, 100]" in line for line in said), said


def test_a_crowded_date_feature_is_told_about_its_lower_bound_not_a_log_scale():
    said: list[str] = []
    X = np.zeros((100, SCHEMA.n_features))
    X[:, SCHEMA.blocks["seen"].start] = 0.01  # every date in the first sixteenth
    X[:, SCHEMA.blocks["age"].start] = 0.01
    warn_crowded_features(SCHEMA, X, said.append)
    (date_line,) = [line for line in said if "'seen'" in line]
    assert "[2000-01-01, 2024-12-31]" in date_line
    assert "lower bound closer to its dates" in date_line
    assert "log" not in date_line
    assert any("'age'" in line and "scale: log" in line for line in said)
