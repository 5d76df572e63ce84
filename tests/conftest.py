"""Shared fixtures.

Randomised tests take the ``seed`` fixture. Following scikit-learn's contract, a test using
it must pass for any seed in 0-99; CI runs seed 0 (deterministic). To reproduce another
seed run ``PPDP_TEST_SEED=17 python -m pytest ...``; ``PPDP_TEST_SEED=all`` runs 0-99.

The command-line tests take ``bank_table`` (a small CSV and its schema) and ``one_error_line``
(a refusal is one line on stderr).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest


def _seeds() -> list[int]:
    raw = os.environ.get("PPDP_TEST_SEED", "0")
    if raw == "all":
        return list(range(100))
    return [int(s) for s in raw.split(",")]


@pytest.fixture(params=_seeds())
def seed(request: pytest.FixtureRequest) -> int:
    """A test seed; see the module docstring."""
    return int(request.param)


# -- the command-line tests' small bank table and one-line check --------------------------

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
