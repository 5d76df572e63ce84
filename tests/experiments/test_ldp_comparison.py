"""The LDP comparison: the reference oracles are exact where the math is exact, unbiased
and at their stated variance (seeded statistical checks with a broken-variant control),
and a tiny run reproduces C.6's ordering."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pandas as pd
import pytest

from ppdp.experiments import _ldp_oracles, ldp_comparison, run_experiment

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed: pip install 'ppdp[plots]'",
)

K = 12
PROBS = np.linspace(1, 3, K) / np.linspace(1, 3, K).sum()


def _values(n, seed):
    return np.random.default_rng(seed).choice(K, size=n, p=PROBS)


def test_variance_formulas_match_c6():
    """ALGORITHMS C.6's table: OUE/OLH 3.68 and HR 4.68 at ε = 1; 0.076 / 1.08 at ε = 4."""
    assert _ldp_oracles.oue_variance(1.0) == pytest.approx(3.68, abs=0.01)
    assert _ldp_oracles.hr_variance(1.0) == pytest.approx(4.68, abs=0.01)
    assert _ldp_oracles.oue_variance(4.0) == pytest.approx(0.076, abs=0.001)
    assert _ldp_oracles.hr_variance(4.0) == pytest.approx(1.08, abs=0.01)


def test_hadamard_sets_are_halves_and_the_flip_is_a_bijection():
    big_k = 16
    c = np.arange(big_k)
    for v in range(K):
        row = v + 1
        inside = _ldp_oracles._popcount_parity(row & c) == 0
        assert inside.sum() == big_k // 2  # |C_v| = K/2, so the likelihood ratio is e^ε
        flipped = c ^ (row & -row)
        assert (inside[flipped] != inside).all()


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["OUE", "OLH", "HR"])
def test_oracles_unbiased_with_their_variance(name):
    """Seeded (seeds 0..39). With 40 runs of n = 4,000 at ε = 1 the mean error of each item
    has sd ≈ √(Var/40) ≈ 0.005; the bound 0.03 is about 6 sd (false-positive rate < 1e-6 per
    item by a normal approximation). The measured n·Var over 12 items × 40 runs is within 35 %
    of the formula (OLH's integer g and the items' own f(1−f) terms add up to ~15 %).
    Control: estimating with the wrong ε (2ε) gives a bias far beyond the bound."""
    est, formula = _ldp_oracles.ORACLES[name]
    n, eps = 4_000, 1.0
    errors, broken = [], []
    for s in range(40):
        vals = _values(n, s)
        truth = np.bincount(vals, minlength=K) / n
        f = est(vals, K, eps, random_state=1000 + s)
        errors.append(f - truth)
        if s < 5 and name == "OUE":
            q, q2 = 1 / (math.e + 1), 1 / (math.e**2 + 1)
            broken.append((f * (0.5 - q) + q - q2) / (0.5 - q2) - truth)
    errors = np.array(errors)
    assert np.abs(errors.mean(axis=0)).max() < 0.03
    measured = n * errors.var(axis=0, ddof=1).mean()
    assert measured == pytest.approx(formula(eps), rel=0.35)
    if broken:
        assert np.abs(np.mean(broken, axis=0)).max() > 0.05


@needs_matplotlib
def test_tiny_run_reproduces_the_ordering(tmp_path):
    out = tmp_path / "ldp"
    result = run_experiment(
        "ldp-comparison",
        out_dir=out,
        epsilons=(1.0, ldp_comparison.INVERSE_SQUARE_EPSILON),
        n=3_000,
        trials=3,
    )
    assert sorted({p.suffix for p in result.files}) == [".csv", ".json", ".md", ".png"]
    res = pd.read_csv(out / "results.csv")
    assert set(res.mechanism) == {"OUE", "OLH", "HR", "CV-gaussian", "CV-inverse-square"}
    cv = res[res.mechanism == "CV-gaussian"]
    # calibrated by the continuous bound: the exact lattice ε is at most the target
    assert (cv.epsilon_exact <= cv.epsilon + 1e-9).all() and (
        cv.epsilon_exact > 0.9 * cv.epsilon
    ).all()
    assert result.key_numbers["cv_gaussian_worse_than_oue_everywhere"] is True
    assert all(r > 4 for r in result.key_numbers["cv_gaussian_ratio_to_oue"].values())
    inv = res[res.mechanism == "CV-inverse-square"].iloc[0]
    assert inv.epsilon_exact == pytest.approx(4 * math.log(2))
    assert "C.6" in result.summary and "differ" in result.summary
