"""Joint-view calibration: exact factors, plans, grids, masks that cancel exactly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from ppdp.exceptions import NotDifferentiallyPrivateWarning, ParameterError
from ppdp.federated.calibration import (
    DEFAULT_MASK_SCALE,
    coalition_factor,
    federated_noise_plan,
    gaussian_epsilon,
    joint_view_factor,
    joint_view_factor_closed_form,
    noise_covariance,
    paper_mask_scale,
)
from ppdp.federated.masks import KeyStreamRandom, dealer_masks, pair_key, pairwise_masks
from ppdp.mechanisms import GaussianMechanism
from ppdp.publish.fisher import lda_noise_plan
from ppdp.random import SeededRandom

MS = (2, 3, 5, 10)


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("K", [None, 0.3, 1.0, 10.0, DEFAULT_MASK_SCALE])
def test_closed_form_equals_numerical_inverse(m, K):
    K = paper_mask_scale(m) if K is None else K
    assert joint_view_factor(m, K) == pytest.approx(joint_view_factor_closed_form(m, K), rel=1e-10)


@pytest.mark.parametrize("m", MS)
def test_paper_split_factor_is_sqrt_2m_over_m_plus_1(m):
    # ALGORITHMS-publishing B.5 item 2: the joint view has noise variance β²(m+1)/(2m).
    f = joint_view_factor_closed_form(m, paper_mask_scale(m))
    assert f**2 == pytest.approx(2 * m / (m + 1), rel=1e-14)


@pytest.mark.parametrize("m", MS)
def test_covariance_has_the_stated_structure(m):
    K = 7.0
    cov = noise_covariance(m, K)
    np.testing.assert_allclose(np.diag(cov), K + 1.0 / m)  # Var e_j + Var g_j
    np.testing.assert_allclose(cov.sum(axis=1), 1.0 / m, atol=1e-12)  # masks sum to zero
    # The aggregate of the m messages carries exactly the centralised variance 1.
    assert np.ones(m) @ cov @ np.ones(m) == pytest.approx(1.0)


@pytest.mark.parametrize("m", MS)
def test_default_mask_scale_costs_less_than_5e_5(m):
    f = joint_view_factor_closed_form(m, DEFAULT_MASK_SCALE)
    assert 1.0 < f < 1.0 + (m - 1) ** 2 / (2 * m * m * DEFAULT_MASK_SCALE) + 1e-12 < 1.00005


def test_factor_decreases_to_one_as_masks_grow():
    fs = [joint_view_factor_closed_form(5, K) for K in (0.8, 1, 10, 100, 1e4, 1e8)]
    assert all(a > b for a, b in itertools.pairwise(fs)) and fs[-1] < 1 + 1e-8


@pytest.mark.parametrize("m", MS)
def test_coalition_limits(m):
    K = 1e8
    assert coalition_factor(m, K, 0) == pytest.approx(1.0, abs=1e-6)
    for t in range(1, m):
        h = m - t
        for dealer in ("trusted", "none"):
            assert coalition_factor(m, K, t, dealer=dealer) == pytest.approx(
                math.sqrt(m / h), rel=1e-5
            )
    assert coalition_factor(m, K, 0, dealer="colluding") == pytest.approx(math.sqrt(m))


def test_coalition_without_colluders_is_the_joint_view():
    for m in MS:
        for K in (paper_mask_scale(m), 3.0):
            assert coalition_factor(m, K, 0) == pytest.approx(joint_view_factor(m, K), rel=1e-10)
            assert coalition_factor(m, K, 0, dealer="none") == pytest.approx(
                joint_view_factor(m, K), rel=1e-10
            )


def test_coalition_rejects_too_many_colluders():
    with pytest.raises(ParameterError, match="colluders"):
        coalition_factor(3, 1.0, 3)


def test_gaussian_epsilon_inverts_the_analytic_calibration():
    mech = GaussianMechanism(epsilon=0.7, delta=1e-6, sensitivity=1.0)
    assert gaussian_epsilon(1.0 / mech.sigma, 1e-6) == pytest.approx(0.7, rel=1e-6)


@pytest.mark.parametrize("m", [2, 5, 10])
def test_plan_noise_is_the_centralised_noise_times_the_factor(m):
    kw = {"epsilon": 1.0, "delta": 1e-5, "n_features": 6, "class_counts": [300, 200]}
    central = lda_noise_plan(**kw)
    fp = federated_noise_plan(**kw, n_owners=m)
    ratio = fp.second_moment_sigma / central.scatter_sigma
    jf = joint_view_factor_closed_form(m, DEFAULT_MASK_SCALE)
    assert jf <= ratio < jf * (1 + 1e-5)
    for s, c, mean_sigma in zip(fp.sum_sigmas, [300, 200], central.mean_sigmas, strict=True):
        assert jf <= s / (mean_sigma * c) < jf * (1 + 1e-5)
    # owners' own noise adds up to the aggregate level; masks have K times its variance
    assert m * fp.owner_second_moment_sigma**2 == pytest.approx(fp.second_moment_sigma**2)
    assert (m - 1) * fp.pair_second_moment_sigma**2 == pytest.approx(
        DEFAULT_MASK_SCALE * fp.second_moment_sigma**2
    )
    # the grids: powers of two, coarse enough for the masks, fine for the owners' noise
    for grid, pair, own in (
        (fp.sum_grid, max(fp.pair_sum_sigmas), min(fp.owner_sum_sigmas)),
        (fp.second_moment_grid, fp.pair_second_moment_sigma, fp.owner_second_moment_sigma),
    ):
        assert math.frexp(grid)[0] == 0.5
        assert pair * 2.0**-40 <= grid <= own * 2.0**-20
    assert fp.guarantee().is_private


@pytest.mark.parametrize("m", [2, 5])
def test_paper_split_warns_and_is_not_private(m):
    with pytest.warns(NotDifferentiallyPrivateWarning, match="joint view|whoever sees"):
        fp = federated_noise_plan(
            epsilon=1.0,
            delta=1e-5,
            n_features=3,
            class_counts=[50, 50],
            n_owners=m,
            joint_view=False,
        )
    assert fp.mask_scale == paper_mask_scale(m)
    assert fp.joint_factor == pytest.approx(math.sqrt(2 * m / (m + 1)))
    g = fp.guarantee()
    assert not g.is_private and "per-message" in str(g.to_dict())


def test_mask_scale_is_bounded():
    with pytest.raises(ParameterError, match="mask_scale"):
        federated_noise_plan(
            epsilon=1.0,
            delta=1e-5,
            n_features=3,
            class_counts=[5, 5],
            n_owners=2,
            mask_scale=1e13,
        )


def _plan(m=4, d=5):
    return federated_noise_plan(
        epsilon=1.0, delta=1e-5, n_features=d, class_counts=[60, 40], n_owners=m
    )


def test_dealer_masks_cancel_exactly_and_lie_on_the_grid():
    fp = _plan()
    masks = dealer_masks(fp, random_state=SeededRandom(3))
    total_sums = sum(mk.sums for mk in masks)
    total_sm = sum(mk.second_moment for mk in masks)
    assert np.all(total_sums == 0.0) and np.all(total_sm == 0.0)
    for mk in masks:
        assert np.all(np.remainder(mk.sums, fp.sum_grid) == 0.0)
        assert np.all(np.remainder(mk.second_moment, fp.second_moment_grid) == 0.0)
        # masks are large: about sqrt(K) times the aggregate noise
        assert np.std(mk.second_moment) > 10 * fp.second_moment_sigma


def test_pairwise_masks_cancel_exactly_and_agree_at_both_ends():
    fp = _plan(m=3)
    owners = ["a", "b", "c"]
    priv = {o: X25519PrivateKey.generate() for o in owners}
    pub = {o: k.public_key() for o, k in priv.items()}
    masks = [
        pairwise_masks(fp, owners=owners, me=o, own_key=priv[o], peer_keys=pub, session_id="s")
        for o in owners
    ]
    assert np.all(sum(mk.sums for mk in masks) == 0.0)
    assert np.all(sum(mk.second_moment for mk in masks) == 0.0)
    k_ab = pair_key(priv["a"], pub["b"], session_id="s", first="a", second="b")
    assert k_ab == pair_key(priv["b"], pub["a"], session_id="s", first="a", second="b")
    assert k_ab != pair_key(priv["a"], pub["b"], session_id="t", first="a", second="b")
    assert k_ab != pair_key(priv["a"], pub["c"], session_id="s", first="a", second="c")


def test_key_stream_is_deterministic_per_key():
    a, b = KeyStreamRandom(b"k" * 32), KeyStreamRandom(b"k" * 32)
    assert np.array_equal(a.uint64(5), b.uint64(5))
    assert not np.array_equal(KeyStreamRandom(b"j" * 32).uint64(5), a.uint64(5))
    assert a.is_secure
