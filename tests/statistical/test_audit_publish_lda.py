"""Black-box audit of DPLDASynthesizer's noisy statistics, with its half-noise control.

Neighbours (RELIABILITY.md B3, "DP-LDA synthetic"): a tiny schema (one numeric column in
[0, 1], one categorical with two levels, two classes) and a table D of 20 rows; D' replaces
one row ``x = (1, a)`` of class 0 by ``x' = (1, b)`` of class 1. That is the worst case of
the brute-force search in ``tests/publish/test_lda_synth.py``: the released vector (class
sums and upper(Σxxᵀ), 12 coordinates) moves by 1 in 8 coordinates, L1 distance 8 against
the implemented bound 9, so the real mechanism is at most (8/9)ε-DP on this pair and the
half-noise control is about (16/9)ε.

Statistic: the Laplace log-likelihood ratio of the released vector between the two
neighbours, ``Σ_i (|v_i − f_i(D)| − |v_i − f_i(D')|) / b`` with ``b`` the correct
mechanism's scale: a fixed function of one release (Neyman-Pearson optimal for this pair).
Draws come from the synthesizer's own release path (:meth:`DPLDASynthesizer._draw_noisy_sums`,
the statistic and mechanism ``fit`` uses, batched).

False-positive rate: each audit of the correct mechanism fails with probability at most
α = 1e-6 (docs/audit.md); one such audit per seed. The control (noise × 0.5) must FAIL.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import audit
from ppdp.data import Schema
from ppdp.publish.lda_synth import DPLDASynthesizer, _sums_vector

pytestmark = pytest.mark.statistical

EPS = 1.0


def _setup() -> tuple[
    DPLDASynthesizer, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]
]:
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "u", "type": "numeric", "lower": 0, "upper": 1},
                {"name": "c", "type": "categorical", "categories": ["a", "b"]},
            ],
            "label": {"name": "y", "classes": ["n", "p"]},
        }
    )
    rng = np.random.default_rng(0)
    base = pd.DataFrame(
        {
            "u": rng.uniform(0, 1, 19),
            "c": rng.choice(["a", "b"], 19),
            "y": rng.choice(["n", "p"], 19),
        }
    )
    d = pd.concat([base, pd.DataFrame({"u": [1.0], "c": ["a"], "y": ["n"]})], ignore_index=True)
    d_prime = pd.concat(
        [base, pd.DataFrame({"u": [1.0], "c": ["b"], "y": ["p"]})], ignore_index=True
    )
    synth = DPLDASynthesizer(EPS, schema, class_sizes="noisy")  # sums get 0.9 ε
    return synth, schema.encode(d), schema.encode(d_prime)


def _samplers(multiplier: float):
    synth, (X, y), (X2, y2) = _setup()
    f_d, f_d2 = _sums_vector(X, y, 2), _sums_vector(X2, y2, 2)
    changed = np.nonzero(np.abs(f_d - f_d2) > 0.5)[0]  # the rest differ by float rounding
    _, eps_sums = synth._budget_split()
    b = synth._sums_mechanism(eps_sums, X.shape[0]).scale

    def statistic(v: np.ndarray) -> np.ndarray:
        v = v[:, changed]
        return (np.abs(v - f_d[changed]) - np.abs(v - f_d2[changed])).sum(axis=1) / b

    def on(Xs: np.ndarray, ys: np.ndarray):
        def sample(n: int, source) -> np.ndarray:
            return statistic(synth._draw_noisy_sums(Xs, ys, n, source, noise_multiplier=multiplier))

        return sample

    return on(X, y), on(X2, y2), eps_sums, changed, f_d, f_d2


def test_pair_is_the_worst_case() -> None:
    *_, changed, f_d, f_d2 = _samplers(1.0)
    assert changed.size == 8
    assert np.abs(f_d - f_d2).sum() == pytest.approx(8.0, abs=1e-12)


def test_noisy_sums_pass_audit_and_half_noise_fails(seed: int) -> None:
    """Claimed ε (the sums' share, 0.9): pass. Noise × 0.5 claiming the same ε: FAIL."""
    s_d, s_d2, eps_sums, *_ = _samplers(1.0)
    ok = audit(
        s_d,
        s_d2,
        claimed_epsilon=eps_sums,
        n_select=50_000,
        n_measure=400_000,
        random_state=seed,
    )
    assert ok.passed, str(ok)
    assert ok.epsilon_lower_bound > 0.5 * eps_sums  # informative, not vacuous
    h_d, h_d2, *_ = _samplers(0.5)
    broken = audit(
        h_d,
        h_d2,
        claimed_epsilon=eps_sums,
        n_select=50_000,
        n_measure=400_000,
        random_state=seed,
    )
    assert not broken.passed, f"the audit is broken: the half-noise control passed: {broken}"
