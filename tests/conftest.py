"""Shared fixtures.

Randomised tests take the ``seed`` fixture. Following scikit-learn's contract, a test using
it must pass for any seed in 0-99; CI runs seed 0 (deterministic). To reproduce another
seed run ``PPDP_TEST_SEED=17 python -m pytest ...``; ``PPDP_TEST_SEED=all`` runs 0-99.
"""

from __future__ import annotations

import os

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
