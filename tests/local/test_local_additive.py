"""AdditiveRandomizer: guarantees, noise law, randomise, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import kstest

from ppdp import noise as ppdp_noise
from ppdp.budget import GuaranteeKind
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.local import AdditiveRandomizer
from ppdp.mechanisms import gaussian_delta


def test_laplace_is_pure_with_grid_margin():
    r = AdditiveRandomizer(noise="laplace", scale=4.0, domain=(-1.0, 1.0))
    g = r.guarantee()
    assert g.kind is GuaranteeKind.LOCAL and g.delta == 0.0
    lam = ppdp_noise.granularity(4.0)
    assert g.epsilon == (2.0 + lam) / 4.0
    # δ > 0: ε₀ + 2 ln(1 − δ), and delta_at inverts it
    g2 = r.guarantee(0.1)
    assert g2.epsilon == pytest.approx(g.epsilon + 2 * math.log(0.9))
    assert r.delta_at(g2.epsilon) == pytest.approx(0.1)
    assert r.delta_at(g.epsilon) == 0.0


def test_laplace_profile_against_numerical_integration():
    # δ(ε) = ∫ max(0, p(y) − e^ε p(y − D)) dy for Lap(b) shifted by D.
    b, d = 1.0, 1.5
    r = AdditiveRandomizer(noise="laplace", scale=b, domain=(0.0, d))
    for eps in (0.2, 0.8, 1.3):
        f = lambda y, e=eps: max(  # noqa: E731
            0.0, math.exp(-abs(y) / b) / (2 * b) - math.exp(e) * math.exp(-abs(y - d) / b) / (2 * b)
        )
        val = integrate.quad(f, -40, 40, points=[0.0, d], limit=200)[0]
        assert r.delta_at(eps) == pytest.approx(val, rel=1e-6, abs=1e-9)


def test_gaussian_needs_delta_and_matches_balle_wang():
    r = AdditiveRandomizer(noise="gaussian", scale=2.0, domain=(0.0, 1.0))
    assert r.guarantee().kind is GuaranteeKind.NONE
    g = r.guarantee(1e-6)
    assert g.kind is GuaranteeKind.LOCAL and g.delta == 1e-6
    assert gaussian_delta(2.0, g.epsilon, r.sensitivity) <= 1e-6
    assert gaussian_delta(2.0, g.epsilon * (1 - 1e-6), r.sensitivity) > 1e-6


def test_uniform_has_no_finite_epsilon_below_d_over_w():
    r = AdditiveRandomizer(noise="uniform", scale=4.0, domain=(0.0, 1.0))
    g = r.guarantee()
    assert g.kind is GuaranteeKind.NONE
    assert "no finite ε at δ=0" in g.assumptions[0]
    assert g.details["interval_width_95"] == pytest.approx(0.95 * 4.0)
    assert g.details["aa_privacy"] == pytest.approx(4.0)
    assert r.guarantee(0.25).epsilon == 0.0
    assert r.guarantee(0.2).kind is GuaranteeKind.NONE
    json.dumps(g.to_dict())


def test_uniform_reports_lie_on_the_declared_grid_for_both_inputs():
    """Issue 11: the unsnapped construction put x = 0's reports on the 2**-51 grid always and
    x = 0.1's half the time; the snapped one puts both on the declared grid Λ."""
    r = AdditiveRandomizer(noise="uniform", scale=4.0, domain=(0.0, 0.1))
    assert r.grid == ppdp_noise.granularity(4.0) == 2.0**-30
    m = r.uniform_half_points
    assert m == 2**31
    for x in (0.0, 0.1):
        w = r.randomise(np.full(100_000, x), random_state=5)
        k = w / r.grid  # exact: Λ is a power of two
        assert np.all(k == np.rint(k)), f"a report for x={x} is off the grid Λ"
        noise_steps = k - ppdp_noise.snap(x, r.grid) / r.grid
        assert noise_steps.min() >= -m and noise_steps.max() <= m
        s_lo, s_hi = r.noise_support()
        assert np.all((w - x >= s_lo) & (w - x <= s_hi))
        assert s_hi <= 2.0 + r.grid / 2


def test_uniform_delta_floor_counts_the_grid_exactly():
    """δ = j/(2m + 1), j = (snap(hi) − snap(lo))/Λ: computed here from the definitions."""
    from fractions import Fraction

    for scale, domain in [(4.0, (0.0, 0.1)), (0.37, (-0.3, 0.7)), (3.0, (1.0, 2.5)), (0.5, (0, 1))]:
        r = AdditiveRandomizer(noise="uniform", scale=scale, domain=domain)
        lam = Fraction(ppdp_noise.granularity(scale))
        m = math.floor(Fraction(scale) / (2 * lam))
        j = round(Fraction(domain[1]) / lam) - round(Fraction(domain[0]) / lam)
        exact = min(Fraction(1), Fraction(j, 2 * m + 1))
        assert Fraction(r.delta_floor()) >= exact
        assert r.delta_floor() == pytest.approx(float(exact), rel=1e-15)
        assert r.delta_floor() == pytest.approx(min(1.0, r.width / scale), rel=1e-8)
        assert r.delta_at(0.0) == r.delta_at(5.0) == r.delta_floor()
    r = AdditiveRandomizer(noise="uniform", scale=4.0, domain=(0.0, 0.1))
    assert r.delta_floor() == pytest.approx(107374182 / (2**32 + 1), rel=1e-15)
    assert r.delta_floor() < 0.025
    assert r.guarantee(0.025).epsilon == 0.0
    assert r.guarantee(0.0249).kind is GuaranteeKind.NONE
    assert r.guarantee(0.025).details["grid_points"] == 2**32 + 1


def test_uniform_delta_floor_is_the_mass_of_impossible_reports():
    """Seeded: reports for x = 0.1 that are impossible for x = 0 (|w| > mΛ) have frequency δ.

    Binomial(200,000, δ ≈ 0.025): the tolerance 0.003 is 8.6 standard deviations
    (false-positive rate below 1e-15)."""
    r = AdditiveRandomizer(noise="uniform", scale=4.0, domain=(0.0, 0.1))
    w = r.randomise(np.full(200_000, 0.1), random_state=9)
    impossible = np.abs(w) > r.uniform_half_points * r.grid
    assert abs(impossible.mean() - r.delta_floor()) < 0.003


def test_legacy_metrics_known_values():
    g = AdditiveRandomizer(noise="gaussian", scale=1.0, domain=(0, 1)).legacy_metrics()
    assert g["interval_width_50"] == pytest.approx(1.349, abs=1e-3)
    assert g["interval_width_95"] == pytest.approx(3.920, abs=1e-3)
    assert g["aa_privacy"] == pytest.approx(math.sqrt(2 * math.pi * math.e))


@pytest.mark.parametrize("noise", ["uniform", "gaussian", "laplace"])
def test_noise_law_functions_agree(noise):
    r = AdditiveRandomizer(noise=noise, scale=0.7, domain=(0.0, 1.0))
    t = np.linspace(-3, 3, 13)
    # cdf is the integral of the pdf; the integrated cdf is the integral of the cdf
    for a in t:
        assert r.noise_cdf(a) == pytest.approx(
            integrate.quad(lambda u: float(r.noise_pdf(u)), -12, a, points=[-0.35, 0, 0.35])[0],
            abs=1e-7,
        )
        assert r.noise_integrated_cdf(a) == pytest.approx(
            integrate.quad(lambda u: float(r.noise_cdf(u)), -12, a, points=[-0.35, 0, 0.35])[0],
            abs=1e-7,
        )
    for s in (0.5, 2.0, 7.0):
        real = integrate.quad(
            lambda u, s=s: float(r.noise_pdf(u)) * math.cos(s * u),
            -12,
            12,
            points=[-0.35, 0, 0.35],
            limit=200,
        )[0]
        assert float(r.noise_characteristic(s)) == pytest.approx(real, abs=1e-7)


@pytest.mark.parametrize("noise", ["uniform", "gaussian", "laplace"])
def test_randomise_has_the_stated_noise_law(noise):
    """KS test of w − x against the noise cdf; seeded, false-positive rate 1e-4."""
    r = AdditiveRandomizer(noise=noise, scale=0.5, domain=(0.0, 1.0))
    x = np.full(20_000, 0.25)
    w = r.randomise(x, random_state=11)
    assert w.shape == x.shape
    assert kstest(w - 0.25, lambda t: r.noise_cdf(t)).pvalue > 1e-4


def test_round_trip_and_json():
    r = AdditiveRandomizer(noise="laplace", scale=0.3, domain=(-2, 5))
    assert AdditiveRandomizer.from_dict(json.loads(json.dumps(r.to_dict()))) == r


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"noise": "cauchy", "scale": 1.0, "domain": (0, 1)}, ParameterError, "noise"),
        ({"noise": "gaussian", "scale": 0.0, "domain": (0, 1)}, ParameterError, "scale"),
        ({"noise": "gaussian", "scale": 1.0, "domain": (1, 0)}, ParameterError, "lo < hi"),
        ({"noise": "gaussian", "scale": 1.0, "domain": (0, math.inf)}, ParameterError, "domain"),
        ({"noise": "gaussian", "scale": 1.0, "domain": 3}, ParameterTypeError, "pair"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        AdditiveRandomizer(**kwargs)


def test_values_outside_the_domain_one_error_without_values():
    r = AdditiveRandomizer(noise="gaussian", scale=1.0, domain=(0.0, 1.0))
    with pytest.raises(
        DataValidationError, match=r"2 of 4 values lie outside the declared domain"
    ) as e:
        r.randomise([0.5, 1.5, -3.25, 0.0])
    assert "1.5" not in str(e.value) and "3.25" not in str(e.value)
    with pytest.raises(DataValidationError, match="not finite"):
        r.randomise([np.nan])
    with pytest.raises(ParameterTypeError, match="real numbers"):
        r.randomise(["a"])
    with pytest.raises(ParameterError, match="delta"):
        r.guarantee(1.0)


def test_ragged_values_one_error():
    r = AdditiveRandomizer(noise="laplace", scale=1.0, domain=(0.0, 1.0))
    with pytest.raises(ParameterTypeError, match="regular array"):
        r.randomise([[0.1, 0.2], [0.3]])


def test_total_mode_masks_out_of_domain_values_without_an_error() -> None:
    """on_invalid='mask': no value-dependent error (no free counting oracle); the values are
    clipped into the domain (non-finite ones to its midpoint) before the noise."""
    r = AdditiveRandomizer(noise="laplace", scale=1.0, domain=(0.0, 2.0))
    bad = np.array([-5.0, np.nan, 7.0, 1.5])
    with pytest.raises(DataValidationError, match="outside the declared domain"):
        r.randomise(bad, random_state=0)
    np.testing.assert_array_equal(r.check_values(bad, on_invalid="mask"), [0.0, 1.0, 2.0, 1.5])
    a = r.randomise(bad, random_state=3, on_invalid="mask")
    b = r.randomise([0.0, 1.0, 2.0, 1.5], random_state=3)
    np.testing.assert_array_equal(a, b)  # the same release as for the masked values
    with pytest.raises(ParameterError, match="on_invalid"):
        r.randomise(bad, on_invalid="drop")
