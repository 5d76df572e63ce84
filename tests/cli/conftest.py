"""Shared pieces of the command-line tests: a small bank table with its schema, and the
check that a refusal is one line on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

BANK_SCHEMA = {
    "schema_version": 1,
    "columns": [
        {"name": "age", "type": "numeric", "lower": 18, "upper": 90, "integer": True},
        {"name": "job", "type": "categorical", "categories": ["a", "b", "c"]},
    ],
    "label": {"name": "y", "classes": ["no", "yes"]},
}


@pytest.fixture
def bank_table(tmp_path):
    """A 200-row table with an integer age, a 3-code job and a two-class label, as a CSV
    file and its JSON schema."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 91, 200),
            "job": rng.choice(["a", "b", "c"], 200),
            "y": rng.choice(["no", "yes"], 200),
        }
    )
    data, schema = tmp_path / "bank.csv", tmp_path / "schema.json"
    df.to_csv(data, index=False)
    schema.write_text(json.dumps(BANK_SCHEMA), encoding="utf-8")
    return data, schema


@pytest.fixture
def one_error_line(capsys) -> Callable[[], str]:
    """Read what the command printed and return its one stderr line (nothing on stdout, no
    traceback, exactly one line)."""

    def read() -> str:
        out, err = capsys.readouterr()
        assert out == "" and "Traceback" not in err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        return lines[0]

    return read
