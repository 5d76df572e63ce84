"""Mul-LDA-DP noise: the aggregate is the centralised LDA-DP noise; the joint view is as computed.

Every test is seeded (deterministic in CI). Each variance test is a two-sided chi-square test
at level 1e-4: if the code is right, a given test fails with probability at most 1e-4 for a
fresh seed (the module runs 21 such tests: <= 2.1e-3 overall). Each has a deliberately
broken variant (owners' noise with half the variance, or the paper's split without owner
noise) that the same test must reject.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from ppdp.federated import simulate_round
from ppdp.federated.calibration import (
    DEFAULT_MASK_SCALE,
    federated_noise_plan,
    noise_covariance,
    paper_mask_scale,
)
from ppdp.federated.config import RoundConfig
from ppdp.federated.masks import sample_joint_noise
from ppdp.publish.fisher import lda_noise_plan, upper

pytestmark = pytest.mark.statistical

ALPHA = 1e-4


def variance_ratio_pvalue(samples: np.ndarray, sigma: float) -> float:
    """Two-sided p-value of H0: the iid N(0, s²) samples have s = sigma (chi-square)."""
    z = np.asarray(samples, dtype=np.float64).ravel() / sigma
    t = float(np.sum(z * z))
    n = z.size
    lo, hi = stats.chi2.cdf(t, n), stats.chi2.sf(t, n)
    return float(min(1.0, 2 * min(lo, hi)))


def _zero_parts(m: int, n_per: int, d: int):
    # All-zero records: every partial statistic is exactly 0, so what the publisher's sums
    # hold is exactly the aggregate noise (the masks cancel to zero on the grid).
    parts = []
    for _ in range(m):
        X = np.zeros((n_per, d))
        y = np.arange(n_per) % 2
        parts.append((X, y))
    return parts


def _aggregate_noise(m: int, rounds: int, seed: int, d: int = 24):
    sums, second = [], []
    for r in range(rounds):
        res = simulate_round(
            _zero_parts(m, 10, d), epsilon=1.0, delta=1e-5, random_state=1000 * seed + r
        )
        assert res.state == "done", res.abort_reason
        counts = np.asarray(res.plan.class_counts, dtype=np.float64)
        sums.append(res.noisy_means * counts[:, None])
        second.append(upper(res.noisy_second_moment))
    return np.concatenate([s.ravel() for s in sums]), np.concatenate(second), res.plan


def _central(m: int, d: int = 24):
    return lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=d, class_counts=[5 * m, 5 * m])


@pytest.mark.parametrize("m", [2, 5, 10])
def test_aggregate_noise_variance_equals_the_centralised_level(m):
    """Through the protocol (signed messages, masks, owners' noise), the publisher's sums carry
    N(0, σ²) with σ the centralised LDA-DP level (times the joint factor, 1 + O(1e-5))."""
    central = _central(m)
    sums, second, plan = _aggregate_noise(m, rounds=4, seed=m)
    sum_sigma = central.mean_sigmas[0] * 5 * m
    assert plan.sum_sigmas[0] / sum_sigma < 1 + 5e-5
    assert plan.second_moment_sigma / central.scatter_sigma < 1 + 5e-5
    assert variance_ratio_pvalue(second, central.scatter_sigma) > ALPHA
    assert variance_ratio_pvalue(sums, sum_sigma) > ALPHA
    # and the noise is Gaussian (KS against the centralised law)
    assert stats.kstest(second / central.scatter_sigma, "norm").pvalue > ALPHA


@pytest.mark.parametrize("m", [2, 5, 10])
def test_half_variance_owner_noise_is_caught(m, monkeypatch):
    """Broken variant: every owner adds noise of variance σ²/(2m) instead of σ²/m."""
    original = RoundConfig.plan

    def broken(self):
        p = original(self)
        s = 2**0.5
        return dataclasses.replace(
            p,
            owner_sum_sigmas=tuple(x / s for x in p.owner_sum_sigmas),
            owner_second_moment_sigma=p.owner_second_moment_sigma / s,
        )

    monkeypatch.setattr(RoundConfig, "plan", broken)
    central = _central(m)
    _, second, _ = _aggregate_noise(m, rounds=4, seed=m)
    assert variance_ratio_pvalue(second, central.scatter_sigma) < ALPHA


def test_paper_split_without_owner_noise_is_caught(monkeypatch):
    """Broken variant: zero-sum masks only, no owner noise: the aggregate has no noise at all."""
    original = RoundConfig.plan

    def broken(self):
        p = original(self)
        tiny = 1e-12  # rounds to 0 on the grid: no owner noise at all
        return dataclasses.replace(
            p,
            owner_sum_sigmas=tuple(x * tiny for x in p.owner_sum_sigmas),
            owner_second_moment_sigma=p.owner_second_moment_sigma * tiny,
        )

    monkeypatch.setattr(RoundConfig, "plan", broken)
    _, second, _ = _aggregate_noise(3, rounds=1, seed=0)
    assert np.all(second == 0.0)  # the masks cancelled exactly and nothing else was added
    assert variance_ratio_pvalue(second, _central(3).scatter_sigma) < ALPHA


@pytest.mark.parametrize("m", [2, 3, 10])
@pytest.mark.parametrize("paper", [True, False])
def test_joint_view_monte_carlo_matches_the_closed_form(m, paper):
    """Monte Carlo of the publisher's joint view (the masks' real construction): the best
    unbiased estimate of owner j's partial from all m messages has variance
    σ²/(Σ̂⁻¹)_jj — (m+1)/(2m)·σ² for the paper's split (ALGORITHMS B.5.2), ~σ² for large masks."""
    K = paper_mask_scale(m) if paper else DEFAULT_MASK_SCALE
    plan = (
        federated_noise_plan(
            epsilon=1.0,
            delta=1e-5,
            n_features=3,
            class_counts=[40, 60],
            n_owners=m,
            joint_view=not paper,
            mask_scale=K,
        )
        if not paper
        else _paper_plan(m)
    )
    sigma = plan.second_moment_sigma
    z = sample_joint_noise(plan, 100_000, random_state=m + 10 * paper) / sigma
    prec = np.linalg.inv(noise_covariance(m, K))
    for j in (0, m - 1):
        est = (prec @ z)[j] / prec[j, j]  # GLS: noise of the best estimate of p_j
        expected = 1.0 / prec[j, j]
        assert variance_ratio_pvalue(est, expected**0.5) > ALPHA
        if paper:
            assert expected == pytest.approx((m + 1) / (2 * m))
    # the masks cancel exactly: the aggregate is the owners' noise alone, variance σ²
    assert variance_ratio_pvalue(z.sum(axis=0), 1.0) > ALPHA


def _paper_plan(m):
    with pytest.warns(Warning):
        return federated_noise_plan(
            epsilon=1.0,
            delta=1e-5,
            n_features=3,
            class_counts=[40, 60],
            n_owners=m,
            joint_view=False,
        )


def test_monte_carlo_catches_a_wrong_factor():
    """Broken variant of the Monte-Carlo check: claiming the per-message variance σ² for the
    paper's joint view (i.e. ignoring B.5.2) is rejected."""
    m = 10
    plan = _paper_plan(m)
    z = sample_joint_noise(plan, 100_000, random_state=5) / plan.second_moment_sigma
    prec = np.linalg.inv(noise_covariance(m, plan.mask_scale))
    est = (prec @ z)[0] / prec[0, 0]
    assert variance_ratio_pvalue(est, 1.0) < ALPHA


@pytest.mark.parametrize("m", [2, 5, 10])
def test_federated_noise_has_the_law_of_the_centralised_release(m):
    """Two-sample comparison with the centralised LDA-DP release path itself
    (``lda_projection.noisy_statistics`` on the same, all-zero, statistics): KS on the
    second-moment noise and on the class-sum noise; each at level 1e-4."""
    from ppdp.publish.lda_projection import noisy_statistics
    from ppdp.random import SeededRandom

    d = 24
    sums, second, _ = _aggregate_noise(m, rounds=4, seed=50 + m, d=d)
    central = _central(m, d)
    src = SeededRandom(m)
    n_rounds = 4
    c_means, c_second = noisy_statistics(
        central, np.zeros((n_rounds, 2, d)), np.zeros((n_rounds, d * (d + 1) // 2)), src
    )
    c_sums = c_means * (5 * m)
    assert stats.ks_2samp(second, c_second.ravel()).pvalue > ALPHA
    assert stats.ks_2samp(sums, c_sums.ravel()).pvalue > ALPHA


def test_two_sample_comparison_catches_half_variance_owner_noise(monkeypatch):
    """Broken variant of the two-sample test: owners' noise with half the variance."""
    from ppdp.publish.lda_projection import noisy_statistics
    from ppdp.random import SeededRandom

    original = RoundConfig.plan

    def broken(self):
        p = original(self)
        return dataclasses.replace(
            p, owner_second_moment_sigma=p.owner_second_moment_sigma / 2**0.5
        )

    monkeypatch.setattr(RoundConfig, "plan", broken)
    d, m = 24, 5
    _, second, _ = _aggregate_noise(m, rounds=4, seed=55, d=d)
    _, c_second = noisy_statistics(
        _central(m, d), np.zeros((4, 2, d)), np.zeros((4, d * (d + 1) // 2)), SeededRandom(5)
    )
    assert stats.ks_2samp(second, c_second.ravel()).pvalue < ALPHA
