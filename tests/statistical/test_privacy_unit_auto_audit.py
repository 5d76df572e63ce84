"""Black-box audit of ``max_rows: auto`` (the exponential mechanism on the quantile of rows
per person): neighbours differ by one person, whatever their number of rows.

The pair is the worst found (exact output distributions, ``probabilities``: the largest log
ratio of a threshold event both sides hit at least 5 % of the time) among tables of 6 to 40
persons and one person of 1..upper+3 rows added; the draws come from the
mechanism's own batched sampler (``_sample``, what ``randomise`` runs), the statistic is
the chosen ``max_rows``. The correct choice must PASS at ε; the broken choice, the same
mechanism on the quantile of *rows* (each row counts its person's size: a person moves the
utility by their number of rows, the calibration assumes one), must FAIL at the same ε.
False-positive rate α = 1e-6 per audit (``docs/audit.md``); seeded (seed 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.audit import audit
from ppdp.data import AutoMaxRows
from ppdp.data.contribution import auto_utilities
from ppdp.mechanisms import ExponentialMechanism

pytestmark = pytest.mark.statistical

SPEC = AutoMaxRows(upper=12, quantile=0.9, epsilon=1.0)
MECH = ExponentialMechanism(epsilon=SPEC.epsilon, sensitivity=1.0)
DRAWS = {"n_select": 20_000, "n_measure": 200_000, "alpha": 1e-6}


def _persons(sizes):
    return auto_utilities(sizes, SPEC)


def _rows(sizes):
    return auto_utilities(np.repeat(sizes, sizes), SPEC)


def _detectable_loss(a, b) -> float:
    """The largest |log P(E)/P′(E)| over events E = {k ≤ t} and {k ≥ t} that both sides
    hit at least 5 % of the time (what 200,000 draws can measure)."""
    p, q = MECH.probabilities(a), MECH.probabilities(b)
    events = [(np.cumsum(p), np.cumsum(q)), (np.cumsum(p[::-1]), np.cumsum(q[::-1]))]
    best = 0.0
    for pe, qe in events:
        ok = (pe >= 0.05) & (qe >= 0.05)
        if ok.any():
            best = max(best, float(np.max(np.abs(np.log(pe[ok] / qe[ok])))))
    return best


def _worst_pair(utility):
    rng = np.random.default_rng(0)
    best, pair = -1.0, None
    for _ in range(40):
        sizes = rng.integers(1, 16, rng.integers(6, 40))
        for m in range(1, SPEC.upper + 4):
            a, b = utility(sizes), utility(np.append(sizes, m))
            loss = _detectable_loss(a, b)
            if loss > best:
                best, pair = loss, (a, b)
    return pair


def _sampler(u):
    def sample(n, source):
        return (MECH._sample(u, n, source) + 1).astype(np.float64)

    return sample


def _audit(utility):
    a, b = _worst_pair(utility)
    return audit(_sampler(a), _sampler(b), claimed_epsilon=SPEC.epsilon, random_state=0, **DRAWS)


def test_the_choice_per_person_passes_at_its_epsilon() -> None:
    assert _audit(_persons).passed


def test_broken_choice_over_rows_fails_at_the_same_epsilon() -> None:
    assert not _audit(_rows).passed
