"""Black-box audit of the linear learners per person (output perturbation on per-person
averaged losses): neighbours differ by one person's whole set of rows.

Huber loss (h = 0.5), d = 1, Λ = 0.2: 99 persons with one zero record each (they count in
``n`` and nothing else) and person P with 5 rows ``(1, +1)`` in D, ``(1, −1)`` in D′;
``max_rows = 3`` keeps 3 of them (the bounding, :func:`~ppdp.data.contribution.bound_table`).
Their weights come from :func:`~ppdp.data.contribution.person_weights` (what ``fit`` uses),
the minimiser from the solver with those weights, the noise from
:func:`~ppdp.learn._erm.output_perturbation_release` with the constants of ``n = 100``
persons. Person P's average loss sits on the loss's linear piece at both solutions, so the
per-person sensitivity ``2/(nΛ)`` is attained. Statistic: the released ``w``.

The correct release must PASS at ε = 1. The broken one, calibrated for one row (each row its
own record: uniform weights, the constants of ``n = 102`` rows), must FAIL at the same ε:
P's 3 rows move ``w`` three times as far as its noise allows.
False-positive rate α = 1e-6 per audit (``docs/audit.md``); seeded (seed 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp import noise
from ppdp.audit import audit
from ppdp.data import Schema
from ppdp.data.contribution import ContributionBounds, bound_table, person_weights
from ppdp.learn._erm import (
    DEFAULT_TOL,
    HuberLoss,
    output_perturbation_constants,
    output_perturbation_release,
    solve_erm_batch,
)

pytestmark = pytest.mark.statistical

EPS, LAM = 1.0, 0.2
LOSS = HuberLoss(0.5)
SCHEMA = Schema.from_dict(
    {
        "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 1}],
        "label": {"name": "y", "classes": [-1, 1]},
        "privacy_unit": {"column": "pid", "max_rows": 3},
    }
)


def _table(label: int) -> pd.DataFrame:
    others = pd.DataFrame({"pid": np.arange(100, 199), "x": 0.0, "y": 1})
    person = pd.DataFrame({"pid": 1, "x": [1.0] * 5, "y": label})
    return pd.concat([others, person], ignore_index=True)


def _bounded(label: int):
    bounds = ContributionBounds(SCHEMA.privacy_unit)
    kept, _ = bound_table(_table(label), SCHEMA, bounds, ("0" * 16, "1" * 16), log=False)
    X = kept[["x"]].to_numpy(dtype=np.float64)
    y = kept["y"].to_numpy(dtype=np.float64)
    return X, y, kept["pid"]


def _sampler(label: int, *, per_person: bool):
    X, y, ids = _bounded(label)
    if per_person:
        weights, n = person_weights(ids)
    else:  # broken: calibrated for one row, each row its own record
        weights, n = np.ones(len(y)), len(y)
    k = output_perturbation_constants(EPS, n, LAM, 1, tol=DEFAULT_TOL)
    w, conv, _ = solve_erm_batch(X, y, loss=LOSS, regularization=LAM, sample_weight=weights)
    assert conv.all()

    def sample(m: int, src) -> np.ndarray:
        b = noise.gamma_norm_vector(
            1, k.noise_scale, size=m, random_state=src, granularity=k.granularity
        )
        return output_perturbation_release(w[0], k, b)[:, 0]

    return sample


def _audit(per_person: bool):
    return audit(
        _sampler(1, per_person=per_person),
        _sampler(-1, per_person=per_person),
        claimed_epsilon=EPS,
        n_select=10_000,
        n_measure=100_000,
        random_state=0,
    )


def test_per_person_output_perturbation_passes_at_its_epsilon() -> None:
    result = _audit(True)
    assert result.passed, str(result)
    assert result.epsilon_lower_bound > 0.8  # the pair is near the worst case


def test_calibrated_for_one_row_fails_at_the_same_epsilon() -> None:
    result = _audit(False)
    assert not result.passed, str(result)
