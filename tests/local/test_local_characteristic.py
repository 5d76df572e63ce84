"""CharacteristicVectorRandomizer: exact guarantees on the lattice, estimators, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm, poisson

from ppdp.budget import Guarantee, GuaranteeKind
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.local import CharacteristicVectorRandomizer

ZETA3 = 1.2020569031595942
C_INV_SQ = 6.0 / (2.0 * math.pi**2 - 6.0)


# -- independent pmfs (lattice units), written from the definitions --------------------


def pmf_discrete_normal(x: np.ndarray, sigma: float) -> np.ndarray:
    return norm.cdf((x + 0.5) / sigma) - norm.cdf((x - 0.5) / sigma)


def pmf_poisson(x: np.ndarray, rate: float) -> np.ndarray:
    return poisson.pmf(x, rate)


def pmf_geometric(x: np.ndarray, a: float) -> np.ndarray:
    return np.where(x >= 0, (a - 1.0) / a ** (np.maximum(x, 0) + 1.0), 0.0)


def pmf_zeta3(x: np.ndarray) -> np.ndarray:
    xf = np.maximum(x, 1).astype(float)
    return np.where(x >= 1, 1.0 / (ZETA3 * xf**3), 0.0)


def pmf_inverse_square(x: np.ndarray) -> np.ndarray:
    return C_INV_SQ / (np.abs(x) + 1.0) ** 2


def brute_delta(pmf, h: int, box: tuple[int, int], eps: float, k: int = 2) -> tuple[float, float]:
    """δ(ε) = Σ_z max(0, P(z) − e^ε Q(z)) over a box, for inputs e_0 vs e_1; and the box's
    missing P-mass (an upper bound on the error)."""
    z = np.arange(box[0], box[1] + 1)
    grids = np.meshgrid(*([z] * k), indexing="ij")
    p = pmf(grids[0] - h) * pmf(grids[1])
    q = pmf(grids[0]) * pmf(grids[1] - h)
    for g in grids[2:]:
        common = pmf(g)
        p = p * common
        q = q * common
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0))), max(0.0, 1.0 - float(p.sum()))


def pmf_discrete_gaussian(x: np.ndarray, sigma: float) -> np.ndarray:
    grid = np.arange(-200, 201)
    z = np.sum(np.exp(-(grid**2) / (2 * sigma**2)))
    return np.exp(-(np.asarray(x, dtype=float) ** 2) / (2 * sigma**2)) / z


CASES = [
    ("discrete-normal", {"sigma": 0.7}, 1.0, lambda x: pmf_discrete_normal(x, 0.7), (-12, 14)),
    (
        "discrete-gaussian",
        {"sigma": 0.9},
        0.5,
        lambda x: pmf_discrete_gaussian(x, 0.9),
        (-14, 16),
    ),
    ("discrete-normal", {"sigma": 1.0}, 0.5, lambda x: pmf_discrete_normal(x, 1.0), (-14, 16)),
    ("poisson", {"rate": 2.0}, 1.0, lambda x: pmf_poisson(x, 2.0), (0, 40)),
    ("poisson", {"rate": 3.0}, 0.5, lambda x: pmf_poisson(x, 3.0), (0, 45)),
    ("geometric", {"a": 1.5}, 0.5, lambda x: pmf_geometric(x, 1.5), (0, 250)),
    ("zeta3", {}, 1.0, pmf_zeta3, (1, 700)),
    ("inverse-square", {}, 1.0, pmf_inverse_square, (-500, 500)),
]


@pytest.mark.parametrize(("noise", "kw", "gamma", "pmf", "box"), CASES)
def test_delta_profile_matches_lattice_enumeration(noise, kw, gamma, pmf, box):
    r = CharacteristicVectorRandomizer(regions=2, noise=noise, gamma=gamma, **kw)
    h = r.spike
    for eps in (0.0, 0.5, 1.5, 3.0):
        exact, missing = brute_delta(pmf, h, box, eps)
        got = r.delta_at(eps)
        # The enumeration misses at most `missing` of P-mass; heavy tails need the slack.
        assert got == pytest.approx(exact, abs=missing + 1e-12, rel=1e-7), (noise, eps)


@pytest.mark.parametrize(("noise", "kw", "gamma", "pmf", "box"), CASES[:6])
def test_guarantee_epsilon_is_smallest_on_the_lattice(noise, kw, gamma, pmf, box):
    r = CharacteristicVectorRandomizer(regions=2, noise=noise, gamma=gamma, **kw)
    delta = 0.05
    g = r.guarantee(delta)
    if g.kind is GuaranteeKind.NONE:
        # only when the support mismatch alone exceeds δ
        assert brute_delta(pmf, r.spike, box, 50.0)[0] > delta
        return
    eps = g.epsilon
    assert brute_delta(pmf, r.spike, box, eps)[0] <= delta * (1 + 1e-9)
    if eps > 0:
        assert brute_delta(pmf, r.spike, box, eps - 1e-6)[0] > delta


def test_three_regions_give_the_same_profile_as_two():
    # Coordinates outside the two differing regions cancel from the likelihood ratio.
    pmf = lambda x: pmf_discrete_normal(x, 0.8)  # noqa: E731
    r = CharacteristicVectorRandomizer(regions=3, noise="discrete-normal", sigma=0.8)
    exact, _ = brute_delta(pmf, 1, (-9, 10), 1.0, k=3)
    assert r.delta_at(1.0) == pytest.approx(exact, rel=1e-7, abs=1e-12)


def test_inverse_square_pure_epsilon_is_4_ln_1_plus_h():
    for gamma, h in ((1.0, 1), (0.5, 2), (1 / 3, 3)):
        r = CharacteristicVectorRandomizer(regions=5, noise="inverse-square", gamma=gamma)
        g = r.guarantee()
        assert g.kind is GuaranteeKind.LOCAL
        assert g.epsilon == pytest.approx(4 * math.log(1 + h), rel=1e-12)
        assert g.delta == 0.0
        # the largest log-ratio on a box attains it (at z_j = h, z_l = 0)
        z = np.arange(-50, 51)
        a, b = np.meshgrid(z, z, indexing="ij")
        lr = np.log(
            pmf_inverse_square(a - h)
            * pmf_inverse_square(b)
            / (pmf_inverse_square(a) * pmf_inverse_square(b - h))
        )
        assert lr.max() == pytest.approx(4 * math.log(1 + h), rel=1e-12)


def test_reference_values_of_the_algorithms_note():
    # C.5: γ=1, σ=1 → ε ≈ 7.3 (continuous bound; the lattice is at least as private),
    # Wu's Fig. 3 (γ=0.5, σ=1): δ ≈ 2e-6 at ε=16; σ=4: ε ≈ 1.54; σ=8: ε ≈ 0.73.
    dn = lambda s, g=1.0: CharacteristicVectorRandomizer(  # noqa: E731
        regions=30, noise="discrete-normal", gamma=g, sigma=s
    )
    assert 6.5 < dn(1.0).guarantee(1e-6).epsilon <= 7.3
    assert dn(1.0, 0.5).delta_at(16.0) == pytest.approx(2e-6, rel=0.1)
    assert dn(4.0).guarantee(1e-6).epsilon == pytest.approx(1.54, abs=0.02)
    assert dn(8.0).guarantee(1e-6).epsilon == pytest.approx(0.73, abs=0.01)
    assert dn(1.0).guarantee().kind is GuaranteeKind.NONE
    # Poisson: δ ≥ P(Pois(λ) < h); geometric exactly (0, 1 − 1/a); ζ(3): δ ≥ 0.83.
    pois = CharacteristicVectorRandomizer(regions=3, noise="poisson", rate=5.0)
    assert pois.delta_floor() == pytest.approx(math.exp(-5), rel=1e-9)
    assert pois.guarantee(1e-3).kind is GuaranteeKind.NONE
    geo = CharacteristicVectorRandomizer(regions=3, noise="geometric", a=2.0)
    assert geo.delta_floor() == pytest.approx(0.5, rel=1e-12)
    g = geo.guarantee(0.5 + 1e-9)
    assert (g.epsilon, g.kind) == (0.0, GuaranteeKind.LOCAL)
    z3 = CharacteristicVectorRandomizer(regions=3, noise="zeta3")
    assert z3.delta_floor() == pytest.approx(1 / ZETA3, rel=1e-9)


def test_guarantee_round_trips_through_strict_json():
    cases = [
        ({"noise": "inverse-square"}, GuaranteeKind.LOCAL),
        ({"noise": "zeta3"}, GuaranteeKind.NONE),  # δ floor 1/ζ(3) > 1e-6
        ({"noise": "poisson", "rate": 3.0}, GuaranteeKind.NONE),  # δ floor e^-3 > 1e-6
    ]
    for kw, kind in cases:
        g = CharacteristicVectorRandomizer(regions=4, **kw).guarantee(1e-6)
        text = json.dumps(g.to_dict(), allow_nan=False)  # no NaN or inf in the file
        back = Guarantee.from_dict(json.loads(text))
        assert back == g and back.kind is kind and back.to_dict() == g.to_dict()


# -- randomise / estimate --------------------------------------------------------------

ALL = [
    ("discrete-normal", {"sigma": 1.0}),
    ("discrete-gaussian", {"sigma": 1.0}),
    ("poisson", {"rate": 4.0}),
    ("geometric", {"a": 2.0}),
    ("zeta3", {}),
    ("inverse-square", {}),
]


@pytest.mark.parametrize(("noise", "kw"), ALL)
def test_randomise_shape_lattice_and_support(noise, kw):
    r = CharacteristicVectorRandomizer(regions=4, noise=noise, gamma=0.5, **kw)
    rep = r.randomise(np.array([0, 1, 2, 3] * 50), random_state=3)
    assert rep.dtype == np.int64 and rep.shape == (200, 4)
    assert np.array_equal(r.check_report(rep), rep)


@pytest.mark.parametrize(("noise", "kw"), ALL)
def test_one_step_estimator_is_unbiased(noise, kw, seed):
    """The unbiased vector lies within 6 standard errors of the truth; false-positive rate
    < 1e-8 per coordinate. The ζ(3) law has infinite variance, so its *mean* estimator has
    no standard error (a single draw ≥ 2000 moves it by 0.05: probability ≈ 2% at this n);
    it is tested here with the consistent threshold estimator, and the mean estimator by a
    known answer below."""
    k, n = 4, 40_000
    truth = np.array([0.1, 0.2, 0.3, 0.4])
    x = np.repeat(np.arange(k), (truth * n).astype(int))
    r = CharacteristicVectorRandomizer(regions=k, noise=noise, **kw)
    estimator = "threshold" if noise == "zeta3" else "auto"
    est = r.estimate(r.randomise(x, random_state=seed), estimator=estimator)
    raw = np.array(est.details["unbiased"])
    var = est.details["n_var_per_item"]
    se = math.sqrt((var + 0.25) / n)
    assert np.max(np.abs(raw - truth)) < 6 * se
    assert est.probabilities.sum() == pytest.approx(1.0)
    assert np.all(est.probabilities >= 0)


def test_zeta3_mean_estimator_known_answer():
    r = CharacteristicVectorRandomizer(regions=2, noise="zeta3")
    mean = 1.6449340668482264 / 1.2020569031595942  # ζ(2)/ζ(3)
    n = 1000
    est = r.estimate_from_totals([n * (0.25 + mean), n * (0.75 + mean)], n, estimator="mean")
    assert np.allclose(est.probabilities, [0.25, 0.75])
    assert est.details["n_var_per_item"] is None  # infinite variance


def test_estimate_from_totals_matches_estimate_and_is_consistent_for_inverse_square():
    r = CharacteristicVectorRandomizer(categories=["a", "b", "c"], noise="inverse-square")
    x = np.array(["a"] * 6000 + ["b"] * 3000 + ["c"] * 1000)
    rep = r.randomise(x, random_state=5)
    t1 = r.totals(rep[:4000])
    t2 = r.totals(rep[4000:])
    est = r.estimate_from_totals(t1 + t2, 10_000)
    assert est.categories == ("a", "b", "c")
    assert est.method == "characteristic-vector/threshold"
    assert np.allclose(est.probabilities, r.estimate(rep).probabilities)
    assert np.allclose(est.probabilities, [0.6, 0.3, 0.1], atol=0.05)


def test_known_answer_with_edges_normalises_by_width():
    r = CharacteristicVectorRandomizer(regions=[0.0, 1.0, 3.0], noise="geometric", a=3.0)
    # totals equal to the noise mean plus the exact shares: p = (0.25, 0.75)
    n = 1000
    mean = 1.0 / (3.0 - 1.0)
    est = r.estimate_from_totals([n * (0.25 + mean), n * (0.75 + mean)], n)
    assert np.allclose(est.probabilities, [0.25, 0.75])
    assert np.allclose(est.density, [0.25, 0.375])
    assert np.array_equal(est.edges, [0.0, 1.0, 3.0])


def test_projection_not_clipping():
    r = CharacteristicVectorRandomizer(regions=3, noise="discrete-normal", sigma=1.0)
    est = r.estimate_from_totals([1100.0, 100.0, -200.0], 1000)  # unbiased (1.1, 0.1, -0.2)
    assert np.allclose(est.probabilities, [1.0, 0.0, 0.0])
    assert est.details["unbiased"] == pytest.approx([1.1, 0.1, -0.2])


def test_round_trip_to_dict():
    for r in (
        CharacteristicVectorRandomizer(regions=5, noise="poisson", rate=2.5, gamma=0.25),
        CharacteristicVectorRandomizer(regions=[0, 1, 2.5], noise="zeta3"),
        CharacteristicVectorRandomizer(categories=["x", "y"], noise="geometric", a=1.5),
    ):
        d = json.loads(json.dumps(r.to_dict()))
        assert CharacteristicVectorRandomizer.from_dict(d) == r


# -- bad input: one clear error ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"regions": 1, "sigma": 1.0}, ParameterError, r"regions \(1\) must be an integer >= 2"),
        ({"categories": ["a"], "sigma": 1.0}, ParameterError, "at least 2"),
        ({"regions": 3, "gamma": 0.3, "sigma": 1.0}, ParameterError, "inverse of a positive"),
        ({"regions": 3, "gamma": 2.0, "sigma": 1.0}, ParameterError, "inverse of a positive"),
        ({"regions": 3, "gamma": -1.0, "sigma": 1.0}, ParameterError, "gamma"),
        ({"regions": 3}, ParameterError, r"sigma \(None\) is required"),
        ({"regions": 3, "noise": "poisson", "sigma": 1.0}, ParameterError, "not a parameter"),
        ({"regions": 3, "noise": "geometric", "a": 1.0}, ParameterError, "a \\(1.0\\) must be"),
        ({"regions": 3, "noise": "cauchy"}, ParameterError, "noise"),
        ({"regions": 3, "categories": ["a", "b"], "sigma": 1.0}, ParameterError, "exactly one"),
        ({"regions": [0.0, 1.0, 0.5], "sigma": 1.0}, ParameterError, "increasing"),
        ({"regions": 2.5, "sigma": 1.0}, ParameterError, "at least 3 edges"),
        ({"categories": "ab", "sigma": 1.0}, ParameterTypeError, "sequence"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        CharacteristicVectorRandomizer(**kwargs)


def test_bad_values_and_reports():
    r = CharacteristicVectorRandomizer(regions=3, noise="poisson", rate=2.0, gamma=0.5)
    with pytest.raises(DataValidationError, match="not region indices"):
        r.randomise([0, 3])
    with pytest.raises(DataValidationError, match="k=3 coordinates"):
        r.check_report(np.zeros((2, 4), dtype=int))
    with pytest.raises(DataValidationError, match="off the lattice"):
        r.check_report([[1.5, 0.0, 3.0]])
    with pytest.raises(DataValidationError, match="below 0"):
        r.check_report([[-1, 0, 3]])
    with pytest.raises(DataValidationError, match="impossible under every input"):
        r.check_report([[1, 0, 1]])  # no coordinate reaches the spike h = 2
    with pytest.raises(DataValidationError, match="NaN"):
        r.check_report([[np.nan, 0, 3]])
    with pytest.raises(DataValidationError, match="integers"):
        r.check_report([["a", "b", "c"]])
    edged = CharacteristicVectorRandomizer(regions=[0.0, 1.0, 2.0], sigma=1.0)
    with pytest.raises(DataValidationError, match=r"outside the declared regions \[0, 2\]"):
        edged.randomise([0.5, 2.5])
    cats = CharacteristicVectorRandomizer(categories=["a", "b"], sigma=1.0)
    with pytest.raises(DataValidationError, match="not among the declared categories"):
        cats.randomise(["a", "z"])


def test_mean_estimator_with_no_finite_mean_is_refused():
    r = CharacteristicVectorRandomizer(regions=3, noise="inverse-square")
    with pytest.raises(ParameterError, match="finite mean"):
        r.estimate_from_totals([1, 2, 3], 10, estimator="mean")
    with pytest.raises(ParameterError, match="finite mean"):
        r.totals([[1, 2, 3]], estimator="mean")
    with pytest.raises(DataValidationError, match="totals must be 3"):
        r.estimate_from_totals([1, 2], 10)
    with pytest.raises(ParameterError, match="count"):
        r.estimate_from_totals([1, 2, 3], 0)


def test_randomizer_protocol_and_factory():
    from ppdp.local import AdditiveRandomizer, Randomizer, randomizer_from_dict

    for r in (
        CharacteristicVectorRandomizer(regions=3, noise="zeta3"),
        AdditiveRandomizer(noise="uniform", scale=2.0, domain=(0, 1)),
    ):
        assert isinstance(r, Randomizer)
        assert randomizer_from_dict(json.loads(json.dumps(r.to_dict()))) == r
    with pytest.raises(ParameterError, match="randomizer type"):
        randomizer_from_dict({"type": "oue"})


def test_discrete_gaussian_within_its_zcdp_conversion():
    # ρ = h²/σ² zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP [CKS20]; the exact ε is below it.
    for sigma, gamma in ((2.0, 1.0), (4.0, 0.5)):
        r = CharacteristicVectorRandomizer(
            regions=5, noise="discrete-gaussian", sigma=sigma, gamma=gamma
        )
        g = r.guarantee(1e-6)
        rho = g.details["rho_zcdp"]
        assert rho == pytest.approx(r.spike**2 / sigma**2)
        assert g.epsilon < rho + 2 * math.sqrt(rho * math.log(1e6))
        assert r.guarantee().kind is GuaranteeKind.NONE


def test_gamma_too_small_is_refused():
    with pytest.raises(ParameterError, match="gamma"):
        CharacteristicVectorRandomizer(regions=3, noise="zeta3", gamma=1 / (1 << 20))


def test_total_mode_maps_undeclared_values_into_the_declared_regions() -> None:
    """on_invalid='mask': undeclared categories, indices and values map to a declared region
    (no value-dependent error); the default still refuses them."""
    cats = CharacteristicVectorRandomizer(categories=["a", "b", "c"], sigma=1.0)
    with pytest.raises(DataValidationError):
        cats.region_of(["a", "zz"])
    assert cats.region_of(["a", "zz", "c"], on_invalid="mask").tolist() == [0, 0, 2]
    idx = CharacteristicVectorRandomizer(regions=3, sigma=1.0)
    assert idx.region_of([0, 7, -1, np.nan, 1.5], on_invalid="mask").tolist() == [0, 2, 0, 0, 2]
    out = idx.randomise([0, 7], random_state=1, on_invalid="mask")
    assert out.shape == (2, 3)
