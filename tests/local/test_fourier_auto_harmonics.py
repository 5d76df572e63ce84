"""``harmonics="auto"`` of the Fourier estimator and of EM's Fourier start: the rule's counts
on known noise laws, no refusal while harmonic 1 survives, public inputs only, explicit
counts unchanged, the record in ``details``, and bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ppdp.exceptions import LowUtilityWarning, ParameterError, ParameterTypeError
from ppdp.local import AdditiveRandomizer, fourier_moments, reconstruct_em, reconstruct_fourier
from ppdp.local.reconstruction import (
    AUTO_HARMONICS_MAX,
    AUTO_HARMONICS_THRESHOLD,
    auto_harmonics,
)


def _rand(noise: str, scale: float, domain=(0.0, 1.0)) -> AdditiveRandomizer:
    return AdditiveRandomizer(noise=noise, scale=scale, domain=domain)  # type: ignore[arg-type]


def _expected(r: AdditiveRandomizer, n: int, tau: float = 0.1, cap: int = 64) -> int:
    """The rule written out harmonic by harmonic: keep i while 2/(√n·|φ_Y(i)|) ≤ τ and
    |φ_Y(i)| ≥ 1e-8; stop at the first failure; at least 1, at most ``cap``."""
    lo, hi = r.domain
    m = 0
    for i in range(1, cap + 1):
        phi = abs(float(r.noise_characteristic(2.0 * math.pi * i / (hi - lo))))
        if phi < 1e-8 or 2.0 / (math.sqrt(n) * phi) > tau:
            break
        m = i
    return max(m, 1)


def _reports(r: AdditiveRandomizer, n: int, seed: int) -> np.ndarray:
    lo, hi = r.domain
    x = lo + (hi - lo) * np.random.default_rng(seed + 50_000).beta(2.0, 5.0, n)  # data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded noise warns: tests only
        return r.randomise(x, random_state=seed)


def test_constants_are_the_documented_ones():
    assert AUTO_HARMONICS_THRESHOLD == 0.1
    assert AUTO_HARMONICS_MAX == 64


def test_gaussian_0_1_on_width_1_keeps_three_harmonics_at_n_100000():
    """s_i = 2/(√n·exp(−(0.2πi)²/2)) at n = 10⁵: 0.0077, 0.0139, 0.0374, 0.149, 0.879 —
    harmonic 4 is the first above 0.1. Explicit 12 is still refused (|φ_Y(10)| = 2.7e-9)."""
    r = _rand("gaussian", 0.1)
    assert auto_harmonics(r, 100_000) == 3 == _expected(r, 100_000)
    w = _reports(r, 100_000, 1)
    est = reconstruct_fourier(w, r, bins=40)
    d = est.details
    assert d["harmonics"] == 3 and d["harmonics_choice"] == "auto"
    assert d["harmonics_rule"] == 3 and d["harmonics_threshold"] == 0.1
    assert d["harmonics_stop"] == "harmonic 4's standard error 0.149 > 0.1"
    assert d["shrinkage"] == "soft"
    with pytest.raises(ParameterError, match=r"harmonics \(12\): \|φ_Y\(10\)\| = 2.68e-09"):
        reconstruct_fourier(w, r, 12, bins=40)
    # the count grows with n as the rule says (s_i falls like 1/√n)
    assert [auto_harmonics(r, n) for n in (10, 1_000, 10_000, 10**6, 10**8)] == [
        _expected(r, n) for n in (10, 1_000, 10_000, 10**6, 10**8)
    ]
    assert [auto_harmonics(r, n) for n in (10, 10_000, 10**6, 10**8)] == [1, 2, 4, 5]


def test_uniform_0_5_on_width_1_stops_before_the_erased_harmonic_2():
    r = _rand("uniform", 0.5)
    assert abs(r.noise_characteristic(2.0 * math.pi * 2)) < 1e-15  # harmonic 2 erased
    assert auto_harmonics(r, 100_000) == 1
    w = _reports(r, 100_000, 2)
    est = reconstruct_fourier(w, r, bins=40)
    assert est.details["harmonics"] == 1
    assert est.details["harmonics_stop"].startswith("|φ_Y(2)| = ")
    # harmonic 3 would pass on its own (|φ_Y(3)| = 0.21): the first failure stops the count
    assert auto_harmonics(r, 10**12) == 1
    with pytest.raises(ParameterError, match=r"harmonics \(3\): \|φ_Y\(2\)\|"):
        reconstruct_fourier(w, r, 3, bins=40)


def test_the_rule_depends_on_scale_over_domain_width_only():
    for noise in ("gaussian", "laplace", "uniform"):
        a = _rand(noise, 0.07)
        b = _rand(noise, 0.21, domain=(-1.0, 2.0))
        for n in (500, 20_000, 3_000_000):
            assert auto_harmonics(a, n) == auto_harmonics(b, n) == _expected(a, n)


@pytest.mark.parametrize("noise", ["uniform", "gaussian", "laplace"])
def test_auto_never_refuses_while_harmonic_1_survives(noise):
    """A sweep of noise scales (including every uniform width 1/k, which erases harmonic k)
    and report counts: whenever |φ_Y(1)| ≥ min_characteristic the estimate is returned, and
    every kept harmonic survives."""
    scales = [1.0 / k for k in range(2, 13)] + list(np.geomspace(1e-3, 3.0, 25))
    for scale in scales:
        r = _rand(noise, float(scale))
        phi1 = abs(float(r.noise_characteristic(2.0 * math.pi)))
        for n in (1, 37, 2_000):
            if phi1 < 1e-8:
                with pytest.raises(ParameterError, match="harmonics \\('auto'\\)"):
                    auto_harmonics(r, n)
                continue
            m = auto_harmonics(r, n)
            assert 1 <= m <= AUTO_HARMONICS_MAX
            assert m == _expected(r, n)
            i = np.arange(1, m + 1)
            assert np.all(np.abs(r.noise_characteristic(2.0 * np.pi * i)) >= 1e-8)
        if phi1 >= 1e-8:
            w = _reports(r, 300, 3)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LowUtilityWarning)
                est = reconstruct_fourier(w, r, bins=10)
                em = reconstruct_em(w, r, 10, init="fourier")
            assert est.probabilities.sum() == pytest.approx(1.0)
            assert em.details["harmonics"] == est.details["harmonics"] >= 1


def test_harmonic_1_too_noisy_is_still_kept_and_warns():
    r = _rand("gaussian", 0.3)  # |φ_Y(1)| = 0.17: s_1 = 2/(√n·0.17) > 1 for n = 20
    w = _reports(r, 20, 4)
    with pytest.warns(LowUtilityWarning, match="harmonic 1"):
        est = reconstruct_fourier(w, r, bins=5)
    assert est.details["harmonics"] == 1
    assert "one harmonic is always kept" in est.details["harmonics_stop"]


def test_only_erased_harmonic_1_is_refused():
    wu = _rand("uniform", 20.0)  # Wu's U[0, 20] on [0, 1]: every harmonic erased
    with pytest.raises(ParameterError) as exc:
        reconstruct_fourier(np.full(10, 0.5), wu)
    msg = str(exc.value)
    assert msg.startswith("harmonics ('auto'): |φ_Y(1)| = ") and "\n" not in msg
    assert "erases harmonic 1" in msg
    with pytest.raises(ParameterError, match="harmonics \\('auto'\\)"):
        reconstruct_em(np.full(10, 0.5), wu, 5, init="fourier")
    # min_characteristic moves the refusal as for explicit counts
    r = _rand("gaussian", 0.1)
    assert auto_harmonics(r, 10**30, min_characteristic=1e-3) == 5  # |φ_Y(6)| = 8.2e-4


def test_the_choice_reads_public_inputs_only():
    """Two different report sets of the same size (and their running totals) get the same
    count, the same stop reason and the same noise variances; only n moves it."""
    r = _rand("gaussian", 0.03)
    n = 40_000
    w1 = _reports(r, n, 5)
    w2 = np.full(n, 0.9)  # a point mass: a very different set of reports
    e1 = reconstruct_fourier(w1, r, bins=20)
    e2 = reconstruct_fourier(w2, r, bins=20)
    e3 = reconstruct_fourier(fourier_moments(w1, r), r, bins=20)
    for key in ("harmonics", "harmonics_rule", "harmonics_stop", "noise_variance", "phi_noise"):
        assert e1.details[key] == e2.details[key] == e3.details[key]
    assert e1.details["harmonics"] == auto_harmonics(r, n) == _expected(r, n)
    assert e1.probabilities.tolist() != e2.probabilities.tolist()
    np.testing.assert_allclose(e3.probabilities, e1.probabilities, atol=1e-12)
    em1 = reconstruct_em(w1, r, 20, init="fourier")
    em2 = reconstruct_em(w2, r, 20, init="fourier")
    assert em1.details["harmonics"] == em2.details["harmonics"] == e1.details["harmonics"]
    assert auto_harmonics(r, 4 * n) >= auto_harmonics(r, n)


def test_running_totals_cap_the_automatic_count():
    r = _rand("gaussian", 0.03)
    w = _reports(r, 40_000, 6)
    tot = fourier_moments(w, r, 5)
    est = reconstruct_fourier(tot, r, bins=20)
    assert est.details["harmonics"] == 5
    assert est.details["harmonics_rule"] == auto_harmonics(r, 40_000) > 5
    assert est.details["harmonics_stop"] == "the 5 harmonics the running totals hold"
    # "auto" running totals hold the batch's count; summed batches keep the fewest
    both = fourier_moments(w[:10_000], r) + fourier_moments(w[10_000:], r)
    assert both.harmonics == auto_harmonics(r, 10_000)


def test_tiny_noise_stops_at_the_cap():
    r = _rand("gaussian", 1e-4)
    assert auto_harmonics(r, 10_000) == AUTO_HARMONICS_MAX
    assert auto_harmonics(r, 10_000, max_harmonics=7) == 7
    est = reconstruct_fourier(_reports(r, 2_000, 7), r, bins=10)
    assert est.details["harmonics_stop"] == f"the cap of {AUTO_HARMONICS_MAX} harmonics"


def test_explicit_counts_work_as_before():
    """An explicit count is used as given, with no shrinkage unless one is named: the
    default ``shrinkage="auto"`` equals ``shrinkage=None`` there."""
    r = _rand("gaussian", 0.03)
    w = _reports(r, 20_000, 8)
    given = reconstruct_fourier(w, r, 12, bins=30)
    plain = reconstruct_fourier(w, r, 12, bins=30, shrinkage=None)
    assert given.probabilities.tolist() == plain.probabilities.tolist()
    assert given.details["harmonics"] == 12 and given.details["harmonics_choice"] == "given"
    assert given.details["shrinkage"] is None
    assert given.details["shrinkage_factors"] == [1.0] * 12
    assert "harmonics_rule" not in given.details
    soft = reconstruct_fourier(w, r, 12, bins=30, shrinkage="soft")
    assert soft.details["shrinkage"] == "soft"
    # harmonics="auto" with shrinkage=None: the automatic count, unshrunk
    raw_auto = reconstruct_fourier(w, r, bins=30, shrinkage=None)
    assert raw_auto.details["shrinkage"] is None
    again = reconstruct_fourier(w, r, raw_auto.details["harmonics"], bins=30)
    assert again.probabilities.tolist() == raw_auto.probabilities.tolist()
    # EM: an explicit count starts from the unshrunk estimate, as before
    em12 = reconstruct_em(w, r, 30, init="fourier", harmonics=12)
    theta0 = 0.99 * plain.probabilities + 0.01 / 30
    ref = reconstruct_em(w, r, 30, init=theta0)
    assert em12.iterations == ref.iterations
    np.testing.assert_allclose(em12.probabilities, ref.probabilities, atol=1e-12)
    assert em12.details["harmonics"] == 12 and em12.details["shrinkage"] is None


def test_em_default_start_is_the_auto_soft_estimate():
    r = _rand("gaussian", 0.1)
    w = _reports(r, 30_000, 9)
    four = reconstruct_fourier(w, r, bins=40)
    theta0 = 0.99 * four.probabilities + 0.01 / 40
    via_init = reconstruct_em(w, r, 40, init="fourier")
    given = reconstruct_em(w, r, 40, init=theta0)
    assert via_init.iterations == given.iterations
    np.testing.assert_allclose(via_init.probabilities, given.probabilities, atol=1e-12)
    d = via_init.details
    assert d["init"] == "fourier" and d["harmonics"] == auto_harmonics(r, 30_000) == 3
    assert d["harmonics_choice"] == "auto" and d["shrinkage"] == "soft"
    # the uniform start records no harmonics
    assert "harmonics" not in reconstruct_em(w, r, 40).details


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [
        ("Auto", ParameterError, "harmonics ('Auto') must be 'auto' or an integer >= 1"),
        ("12", ParameterError, "harmonics ('12') must be 'auto' or an integer >= 1"),
        (0, ParameterError, "harmonics (0) must be an integer >= 1"),
        (True, ParameterTypeError, "harmonics (True) must be an integer"),
        (2.5, ParameterTypeError, "harmonics (2.5) must be an integer"),
    ],
)
def test_bad_harmonics_one_line(value, error, fragment):
    r = _rand("gaussian", 0.1)
    for call in (
        lambda: reconstruct_fourier([0.2, 0.4], r, value),
        lambda: reconstruct_em([0.2, 0.4], r, 2, init="fourier", harmonics=value),
        lambda: reconstruct_em([0.2, 0.4], r, 2, harmonics=value),  # checked before any work
        lambda: fourier_moments([0.2, 0.4], r, value),
    ):
        with pytest.raises(error) as exc:
            call()
        assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_bad_shrinkage_and_rule_parameters_one_line():
    r = _rand("gaussian", 0.1)
    with pytest.raises(ParameterError, match="shrinkage \\('AUTO'\\) must be one of 'auto'"):
        reconstruct_fourier([0.2, 0.4], r, shrinkage="AUTO")
    for kw, fragment in (
        ({"n": 0}, "n (0) must be an integer >= 1"),
        ({"n": 10, "threshold": 0.0}, "threshold (0.0) must be a finite number > 0"),
        ({"n": 10, "max_harmonics": 0}, "max_harmonics (0) must be an integer >= 1"),
        ({"n": 10, "min_characteristic": -1.0}, "min_characteristic (-1.0)"),
    ):
        with pytest.raises(ParameterError, match=fragment.replace("(", "\\(").replace(")", "\\)")):
            auto_harmonics(r, **kw)
    with pytest.raises(ParameterTypeError, match="randomizer"):
        auto_harmonics(object(), 10)  # type: ignore[arg-type]
