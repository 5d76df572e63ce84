"""Black-box audit of TableSynthesizer's measurements, with its half-noise control.

Neighbours: a table of 20 rows over two binary columns (no label, ``method="pairs"``: one
2 × 2 contingency table is the whole release). Replace-one: D′ replaces one row (0, 0) by
(1, 1), which moves two cells by one each, the L2 sensitivity √2 that the proof uses.
Add/remove (``relation="add/remove"``): D′ lacks the row (0, 0), one cell moves by one, the
sensitivity 1. Draws come from the release path of ``fit``
(:func:`ppdp.publish.table_synth_model.draw_tables`) with the σ of the synthesizer's own
plan. Statistic: the difference of the two moved cells (the one moved cell under
add/remove), the Gaussian log-likelihood ratio direction (Neyman-Pearson optimal).

Claims: (a) the (ε, δ) the synthesizer states; (b) the point (ε′ = 0.25, δ(ε′)) of the
Gaussian privacy profile of that σ, which is tight, so a 2× shortfall of noise must fail it.
False-positive rate: each audit of the correct mechanism fails with probability at most
α = 1e-6 (docs/audit.md); two such audits per seed and relation.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import ScaledNoise, audit
from ppdp.data import Schema
from ppdp.mechanisms.calibration import gaussian_delta
from ppdp.publish import TableSynthesizer
from ppdp.publish.table_synth_model import draw_tables, table

pytestmark = pytest.mark.statistical

EPS, DELTA = 1.5, 1e-5


def _setup(relation: str):
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
                {"name": "b", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
            ]
        }
    )
    synth = TableSynthesizer(EPS, schema, delta=DELTA, method="pairs", relation=relation)
    plan = synth.plan()
    assert plan.first == ((0, 1),) and plan.n_select == 0  # one table is the whole release
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"a": rng.integers(0, 2, 19), "b": rng.integers(0, 2, 19)})
    d = pd.concat([base, pd.DataFrame({"a": [0], "b": [0]})], ignore_index=True)
    d2 = (
        pd.concat([base, pd.DataFrame({"a": [1], "b": [1]})], ignore_index=True)
        if relation == "replace-one"
        else base
    )

    def exact(df: pd.DataFrame) -> np.ndarray:
        X, y = schema.encode(df)
        return table(plan.bins.codes(schema, X, y), plan.bins.sizes, (0, 1))

    return plan, exact(d), exact(d2)


def _samplers(multiplier: float, relation: str):
    plan, f_d, f_d2 = _setup(relation)
    diff = (f_d - f_d2).ravel()
    if relation == "replace-one":
        assert sorted(diff.tolist()) == [-1.0, 0.0, 0.0, 1.0]  # L2 distance √2, the bound
    else:
        assert sorted(diff.tolist()) == [0.0, 0.0, 0.0, 1.0]  # L2 distance 1, the bound
    up = int(np.argmax(diff))
    down = int(np.argmin(diff)) if relation == "replace-one" else None

    def on(exact: np.ndarray):
        def sample(n: int, source) -> np.ndarray:
            v = draw_tables(exact, plan.sigma_first, n, ScaledNoise(source, multiplier))
            return v[:, up] - v[:, down] if down is not None else v[:, up]

        return sample

    return on(f_d), on(f_d2), plan


@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
@pytest.mark.parametrize("claim", ["stated", "profile"])
def test_measurement_passes_audit_and_half_noise_fails(
    claim: str, relation: str, seed: int
) -> None:
    s_d, s_d2, plan = _samplers(1.0, relation)
    if claim == "stated":
        eps, delta = EPS, DELTA
    else:
        eps = 0.25
        sensitivity = math.sqrt(2.0) if relation == "replace-one" else 1.0
        exact = gaussian_delta(plan.sigma_first, eps, sensitivity)
        delta = min(exact * (1 + 1e-9), 0.999)
    draws = {"n_select": 100_000, "n_measure": 1_000_000, "random_state": seed}
    ok = audit(s_d, s_d2, claimed_epsilon=eps, delta=delta, **draws)
    assert ok.passed, str(ok)
    if claim == "stated":
        return  # the zCDP conversion is loose: a half-noise table can still meet it
    h_d, h_d2, _ = _samplers(0.5, relation)
    broken = audit(h_d, h_d2, claimed_epsilon=eps, delta=delta, **draws)
    assert not broken.passed, f"the audit is broken: the half-noise table passed: {broken}"
