"""Black-box audit of TableSynthesizer under a privacy unit of 3 rows per person, with a
broken control calibrated for one row.

The table has two binary columns (``method="pairs"``: one 2 × 2 contingency table is the
whole release), 19 other persons with one row each, and person P:

- add/remove: P has 5 rows (0, 0), bounded to 3 before any table; D′ lacks P, so one cell
  moves by 3 (L2 sensitivity 3 = k × 1);
- replace one person: P's 3 rows (0, 0) become 3 rows (1, 1) of another person, two cells
  move by 3 (L2 sensitivity 3√2 = k × √2).

Draws come from the release path of ``fit``: the bounding (:meth:`Publisher._bounded`), the
exact table of the kept rows, and :func:`ppdp.publish.table_synth_model.draw_tables` with
the σ of the synthesizer's own per-person plan. Statistic: the moved cell (the difference of
the two moved cells), the Gaussian log-likelihood ratio direction.

Claims: the (ε, δ) the synthesizer states, and the point (ε′ = 0.25, δ(ε′)) of the Gaussian
privacy profile of σ at the per-person sensitivity, which is tight. The broken variant draws
with the σ a per-row plan would use (one row per person: a third of the noise) and must fail
the profile claim. False-positive rate: each audit of the correct mechanism fails with
probability at most α = 1e-6 (docs/audit.md); four such audits. Seeded (seed 0).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import audit
from ppdp.data import Schema
from ppdp.mechanisms.calibration import gaussian_delta
from ppdp.publish import TableSynthesizer
from ppdp.publish.table_synth_model import draw_tables, table
from ppdp.random import SeededRandom

pytestmark = pytest.mark.statistical

EPS, DELTA, K = 1.5, 1e-5, 3
DRAWS = {"n_select": 100_000, "n_measure": 1_000_000, "random_state": 0}
COLUMNS = [
    {"name": "a", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
    {"name": "b", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
]


def _synth(relation: str, max_rows: int) -> TableSynthesizer:
    schema = Schema.from_dict(
        {"columns": COLUMNS, "privacy_unit": {"column": "pid", "max_rows": max_rows}}
    )
    return TableSynthesizer(EPS, schema, delta=DELTA, method="pairs", relation=relation)


def _tables(relation: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    others = pd.DataFrame(
        {"pid": np.arange(100, 119), "a": rng.integers(0, 2, 19), "b": rng.integers(0, 2, 19)}
    )

    def person(rows: int, value: int) -> pd.DataFrame:
        return pd.DataFrame({"pid": 1, "a": [value] * rows, "b": [value] * rows})

    if relation == "add/remove":
        return pd.concat([others, person(5, 0)], ignore_index=True), others
    return (
        pd.concat([others, person(K, 0)], ignore_index=True),
        pd.concat([others, person(K, 1)], ignore_index=True),
    )


def _samplers(relation: str, sigma_of: TableSynthesizer):
    synth = _synth(relation, K)
    plan = synth.plan()
    assert plan.first == ((0, 1),) and plan.n_select == 0 and plan.contribution == K
    sigma = sigma_of.plan().sigma_first
    d, d2 = _tables(relation)

    def exact(df: pd.DataFrame) -> np.ndarray:
        kept = synth._bounded(df, SeededRandom(0), "raise")
        X, y = synth.schema.encode(kept)
        return table(plan.bins.codes(synth.schema, X, y), plan.bins.sizes, (0, 1))

    f_d, f_d2 = exact(d), exact(d2)
    diff = (f_d - f_d2).ravel()
    expected = [0.0, 0.0, 0.0, K] if relation == "add/remove" else [-K, 0.0, 0.0, K]
    assert sorted(diff.tolist()) == expected  # the per-person bound, attained
    up = int(np.argmax(diff))
    down = int(np.argmin(diff)) if relation == "replace-one" else None

    def on(f: np.ndarray):
        def sample(n: int, source) -> np.ndarray:
            v = draw_tables(f, sigma, n, source)
            return v[:, up] - v[:, down] if down is not None else v[:, up]

        return sample

    return on(f_d), on(f_d2), sigma


@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_person_level_measurement_passes_and_per_row_noise_fails(relation: str) -> None:
    s_d, s_d2, sigma = _samplers(relation, _synth(relation, K))
    assert audit(s_d, s_d2, claimed_epsilon=EPS, delta=DELTA, **DRAWS).passed
    eps = 0.25
    sensitivity = K * (math.sqrt(2.0) if relation == "replace-one" else 1.0)
    delta = min(gaussian_delta(sigma, eps, sensitivity) * (1 + 1e-9), 0.999)
    assert audit(s_d, s_d2, claimed_epsilon=eps, delta=delta, **DRAWS).passed
    b_d, b_d2, row_sigma = _samplers(relation, _synth(relation, 1))
    assert math.isclose(sigma / row_sigma, K, rel_tol=1e-6)
    broken = audit(b_d, b_d2, claimed_epsilon=eps, delta=delta, **DRAWS)
    assert not broken.passed, f"the audit is broken: per-row noise passed: {broken}"
