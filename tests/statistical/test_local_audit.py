"""Black-box audits (ppdp.audit, RELIABILITY.md B3) of the local randomizers' guarantees.

Each audit of a true claim fails with probability at most α = 1e-6 (docs/audit.md), so the
family-wise false-positive rate of this module is at most 3e-6 per seed. Each comes with a
deliberately broken variant the audit must catch: a claimed ε half the true one, or the
randomizer with half its noise still claiming the original ε. Seeded (CI: seed 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.audit import audit
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer

pytestmark = pytest.mark.statistical

N_SELECT, N_MEASURE = 50_000, 400_000


def _additive_sampler(r: AdditiveRandomizer, x: float):
    def sample(n, src):
        return r.randomise(np.full(n, x), random_state=src)

    return sample


def test_laplace_additive_pure_claim_audited(seed: int) -> None:
    r = AdditiveRandomizer(noise="laplace", scale=1.0, domain=(0.0, 1.0))
    eps = r.guarantee().epsilon
    d, d2 = _additive_sampler(r, 0.0), _additive_sampler(r, 1.0)
    ok = audit(
        d, d2, claimed_epsilon=eps, n_select=N_SELECT, n_measure=N_MEASURE, random_state=seed
    )
    assert ok.passed, str(ok)
    assert ok.epsilon_lower_bound > 0.8 * eps
    half_claim = audit(
        d, d2, claimed_epsilon=eps / 2, n_select=N_SELECT, n_measure=N_MEASURE, random_state=seed
    )
    assert not half_claim.passed, "the audit missed a claimed ε half the true one"
    weak = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
    half_noise = audit(
        _additive_sampler(weak, 0.0),
        _additive_sampler(weak, 1.0),
        claimed_epsilon=eps,
        n_select=N_SELECT,
        n_measure=N_MEASURE,
        random_state=seed,
    )
    assert not half_noise.passed, "the audit missed half the noise"


def test_gaussian_additive_profile_point_audited(seed: int) -> None:
    """The exact profile point (ε′ = 0.25, δ(ε′)) passes; ε′/2 at the same δ fails."""
    r = AdditiveRandomizer(noise="gaussian", scale=1.0, domain=(0.0, 1.0))
    eps = 0.25
    delta = r.delta_at(eps)
    assert 0.05 < delta < 0.5
    d, d2 = _additive_sampler(r, 0.0), _additive_sampler(r, 1.0)
    ok = audit(
        d,
        d2,
        claimed_epsilon=eps,
        delta=delta,
        n_select=N_SELECT,
        n_measure=N_MEASURE,
        random_state=seed,
    )
    assert ok.passed, str(ok)
    bad = audit(
        d,
        d2,
        claimed_epsilon=eps / 2,
        delta=delta,
        n_select=N_SELECT,
        n_measure=N_MEASURE,
        random_state=seed,
    )
    assert not bad.passed, "the audit missed a claimed ε half the true one"


def test_characteristic_vector_profile_point_audited(seed: int) -> None:
    """Discrete normal (σ = 1.5, γ = 1): statistic z₀ − z₁ on inputs e₀ vs e₁."""
    r = CharacteristicVectorRandomizer(regions=3, noise="discrete-normal", sigma=1.5)
    eps = 0.3
    delta = r.delta_at(eps)
    assert 0.05 < delta < 0.5
    assert r.guarantee(delta).epsilon == pytest.approx(eps, rel=1e-6)

    def sampler(region: int):
        def sample(n, src):
            z = r.randomise(np.full(n, region), random_state=src)
            return (z[:, 0] - z[:, 1]).astype(float)

        return sample

    ok = audit(
        sampler(0),
        sampler(1),
        claimed_epsilon=eps,
        delta=delta,
        n_select=N_SELECT,
        n_measure=N_MEASURE,
        random_state=seed,
    )
    assert ok.passed, str(ok)
    bad = audit(
        sampler(0),
        sampler(1),
        claimed_epsilon=eps / 2,
        delta=delta,
        n_select=N_SELECT,
        n_measure=N_MEASURE,
        random_state=seed,
    )
    assert not bad.passed, "the audit missed a claimed ε half the true one"
