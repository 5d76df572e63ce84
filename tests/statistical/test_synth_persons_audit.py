"""Black-box audit of synthetic persons (TableSynthesizer with per_person columns) where the
neighbours differ by one person's whole set of rows, with a broken control whose row model is
calibrated for one row.

Schema: per-person column ``s`` (0/1), row column ``a`` (0/1), unit ``pid`` with K = 3 rows,
``method="pairs"``. The release is three Gaussian vectors, all drawn by ``fit``: the row
model's (s, a) table (per person: K rows), the person model's (s, rows kept) table and the
rows-per-person histogram (one count per person each). Nineteen other persons have one row
each; person P:

- add/remove: P has 5 rows (0, 0), bounded to 3; D′ lacks P. The row table moves by 3 in one
  cell, the person table and the histogram by 1 each;
- replace one person: P's 3 rows (0, 0) become another person's 3 rows (1, 1): two cells of
  the row table move by 3, two of the person table by 1 (the histogram stays).

Draws: the exact vectors come from the release path (the bounding, the person table of
:mod:`ppdp.publish.synth_persons`), the noise from
:func:`ppdp.publish.table_synth_model.draw_tables` at the σ of the synthesizer's own plans.
Statistic: the Gaussian log-likelihood-ratio direction ``Σ (f_D − f_D′)·v / σ²`` over the
three vectors.

Claims: the stated (ε, δ), and the point (ε′ = 0.25, δ(ε′)) of the Gaussian privacy profile at
``μ = √(2ρ)``, ρ the plan's per-person total (attained under add/remove). The broken variant
draws the row table with the σ a one-row-per-person plan would use (σ / K) and must fail the
profile claim. False-positive rate: each audit of the correct mechanism fails with probability
at most α = 1e-6 (docs/audit.md); four such audits. Seeded (seed 0).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import audit
from ppdp.data import Schema
from ppdp.mechanisms.calibration import gaussian_delta
from ppdp.publish import TableSynthesizer, synth_persons
from ppdp.publish.table_synth_model import draw_tables, table
from ppdp.random import SeededRandom

pytestmark = pytest.mark.statistical

EPS, DELTA, K = 1.5, 1e-5, 3
DRAWS = {"n_select": 100_000, "n_measure": 1_000_000, "random_state": 0}
COLUMNS = [
    {"name": "s", "type": "numeric", "lower": 0, "upper": 1, "integer": True, "per_person": True},
    {"name": "a", "type": "numeric", "lower": 0, "upper": 1, "integer": True},
]


def _synth(relation: str) -> TableSynthesizer:
    unit = {"column": "pid", "max_rows": K}
    schema = Schema.from_dict({"columns": COLUMNS, "privacy_unit": unit})
    return TableSynthesizer(EPS, schema, delta=DELTA, method="pairs", relation=relation)


def _tables(relation: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    others = pd.DataFrame(
        {"pid": np.arange(100, 119), "s": rng.integers(0, 2, 19), "a": rng.integers(0, 2, 19)}
    )

    def person(rows: int, value: int) -> pd.DataFrame:
        return pd.DataFrame({"pid": 1, "s": [value] * rows, "a": [value] * rows})

    if relation == "add/remove":
        return pd.concat([others, person(5, 0)], ignore_index=True), others
    return (
        pd.concat([others, person(K, 0)], ignore_index=True),
        pd.concat([others, person(K, 1)], ignore_index=True),
    )


def _exact(synth: TableSynthesizer, df: pd.DataFrame) -> list[np.ndarray]:
    """The three exact vectors a fit measures: row table, person table, histogram."""
    params = synth._params()
    plan, persons = params.plan, params.persons
    kept = synth._bounded(df, SeededRandom(0), "raise")
    X, y = synth.schema.encode(kept)
    codes = plan.bins.codes(synth.schema, X, y)
    person = synth_persons.person_index(kept, synth.schema)
    values = synth_persons.person_values(synth.schema, X)
    rep, rows = synth_persons.person_rows(person, codes, persons.attributes, values)
    Xp = synth_persons.person_matrix(values[rep], rows, K)
    pcodes = persons.plan.bins.codes(persons.schema, Xp, None)
    return [
        table(codes, plan.bins.sizes, (0, 1)).ravel(),
        table(pcodes, persons.plan.bins.sizes, (0, 1)).ravel(),
        np.bincount(rows - 1, minlength=K).astype(np.float64),
    ]


def _samplers(relation: str, row_factor: float):
    synth = _synth(relation)
    plan, persons = synth.plan(), synth._params().persons
    assert plan.first == ((0, 1),) and plan.n_select == 0 and plan.contribution == K
    assert persons.plan.first == ((0, 1),) and not plan.decode_columns
    sigmas = [plan.sigma_first * row_factor, persons.plan.sigma_first, persons.sigma_histogram]
    d, d2 = _tables(relation)
    f_d, f_d2 = _exact(synth, d), _exact(synth, d2)
    shift = [a - b for a, b in zip(f_d, f_d2, strict=True)]
    moved = [sorted(np.abs(m).tolist())[-2:] for m in shift]
    if relation == "add/remove":  # the per-person bounds, attained
        assert moved == [[0.0, K], [0.0, 1.0], [0.0, 1.0]]
    else:
        assert moved == [[K, K], [1.0, 1.0], [0.0, 0.0]]
    weights = [m / s**2 for m, s in zip(shift, sigmas, strict=True)]

    def on(f: list[np.ndarray]):
        def sample(n: int, source) -> np.ndarray:
            out = np.zeros(n)
            for exact, sigma, w in zip(f, sigmas, weights, strict=True):
                out += draw_tables(exact, sigma, n, source) @ w
            return out

        return sample

    rho = plan.spent_rho() + persons.spent_rho()
    return on(f_d), on(f_d2), rho


@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_persons_pass_at_their_claim_and_a_row_level_row_model_fails(relation: str) -> None:
    s_d, s_d2, rho = _samplers(relation, 1.0)
    assert audit(s_d, s_d2, claimed_epsilon=EPS, delta=DELTA, **DRAWS).passed
    eps = 0.25
    delta = min(gaussian_delta(1.0, eps, math.sqrt(2.0 * rho)) * (1 + 1e-9), 0.999)
    assert audit(s_d, s_d2, claimed_epsilon=eps, delta=delta, **DRAWS).passed
    b_d, b_d2, _ = _samplers(relation, 1.0 / K)
    broken = audit(b_d, b_d2, claimed_epsilon=eps, delta=delta, **DRAWS)
    assert not broken.passed, f"the audit is broken: a row-level row model passed: {broken}"
