"""The discrete Laplace mechanism: exact integer releases, validation, law, audit, accounting.

Statistical tests are seeded (``seed`` fixture; any seed in 0-99 must pass) and state their
false-positive rate: the goodness-of-fit test rejects the correct sampler with probability
at most 1e-6 (a χ² p-value threshold), each audit fails a correct mechanism with
probability at most α = 1e-6.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy.stats import chisquare
from test_mechanism_contract import MechanismContract

from ppdp import noise
from ppdp.accounting import Accountant
from ppdp.accounting._tight import make_composer
from ppdp.accounting.events import DiscreteLaplace, Laplace, event_from_dict
from ppdp.audit import MECHANISMS, audit, audit_mechanism, audit_with_control
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.mechanisms import DiscreteLaplaceMechanism
from ppdp.random import resolve_random_state

GOF_ALPHA = 1e-6  # false-positive rate of the goodness-of-fit test
GOF_DRAWS = 400_000


class TestDiscreteLaplaceContract(MechanismContract):
    """The contract every basic mechanism meets (tests/mechanisms/test_mechanism_contract.py)."""

    cls = DiscreteLaplaceMechanism
    kwargs: ClassVar[dict[str, Any]] = {"epsilon": 1.0, "sensitivity": 2}
    valid_input = 123
    bad_input: ClassVar[Any] = [123.456, math.nan]

    def expected_abs_noise(self, mech: Any) -> float:
        """E|K| of P(k) ∝ q^|k|, q = exp(−1/b): 2q / ((1 + q)(1 − q))."""
        q = math.exp(-1.0 / mech.scale)
        return 2.0 * q / ((1.0 + q) * (1.0 - q))

    def test_default_randomness_is_fresh_noise_of_the_right_scale(self) -> None:
        """Integer noise repeats (the contract's "20 distinct draws" cannot hold): 200 default
        releases are not all equal and their mean |noise| is within [0.6, 1.6]·E|K| (1.92 at
        b = 2; the mean's sd is about 0.14, so a correct mechanism fails with probability
        below 1e-7)."""
        mech = self.make()
        outs = np.array([mech.randomise(self.valid_input) for _ in range(200)], dtype=float)
        mean = float(np.mean(np.abs(outs - self.valid_input)))
        expected = self.expected_abs_noise(mech)
        assert len(set(outs.tolist())) > 1 and 0.6 * expected <= mean <= 1.6 * expected


# -- calibration and exact arithmetic -------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "sensitivity"), [(1.0, 1), (0.5, 2), (0.3, 1), (0.1, 7), (3.0, 5), (1e-6, 1)]
)
def test_scale_is_the_smallest_float_with_delta_over_b_at_most_epsilon(
    epsilon: float, sensitivity: int
) -> None:
    b = DiscreteLaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity).scale
    assert Fraction(sensitivity) / Fraction(b) <= Fraction(epsilon)
    below = math.nextafter(b, 0.0)
    assert Fraction(sensitivity) / Fraction(below) > Fraction(epsilon)


def test_known_scale_has_no_grid_slack() -> None:
    # Unlike LaplaceMechanism (b = 1 + 2**-32 at ε = Δ = 1), no grid is paid for.
    assert DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1).scale == 1.0
    assert DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=2, dimension=9).scale == 4.0


def test_release_is_the_value_plus_the_samplers_integers(seed: int) -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=2, dimension=6)
    value = np.array([[0, 5, -3], [2**53, -(2**53), 17]], dtype=np.int64)
    out = mech.randomise(value, random_state=seed)
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.shape == (2, 3)
    drawn = noise.discrete_laplace(mech.scale, 6, random_state=seed)
    # Exact integer arithmetic even at ±2**53, where float64 would round an odd sum.
    assert np.array_equal(out - value, np.asarray(drawn).reshape(2, 3))


def test_scalar_in_python_int_out(seed: int) -> None:
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1)
    for value in (41, np.int32(41), 41.0, np.float32(41.0)):
        out = mech.randomise(value, random_state=seed)
        assert type(out) is int
        assert out - 41 == noise.discrete_laplace(1.0, random_state=seed)


def test_unsigned_and_small_integer_dtypes_are_released_exactly(seed: int) -> None:
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1, dimension=3)
    for value in (np.array([0, 7, 250], dtype=np.uint8), np.array([1, 2, 3], dtype=np.uint64)):
        out = mech.randomise(value, random_state=seed)
        assert out.dtype == np.int64
        drawn = np.asarray(noise.discrete_laplace(1.0, 3, random_state=seed))
        assert np.array_equal(out - value.astype(np.int64), drawn)


def test_integral_float_sensitivity_is_accepted_as_int() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=2.0)
    assert mech.sensitivity == 2 and type(mech.sensitivity) is int
    assert mech == DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=np.int64(2))


# -- bad input: one line naming the parameter, the value and what is allowed ----------------


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"sensitivity": 1.5}, ParameterError, r"^sensitivity \(1\.5\) must be a whole number"),
        ({"sensitivity": 0}, ParameterError, r"^sensitivity \(0\) must be a whole number in"),
        ({"sensitivity": -2}, ParameterError, r"^sensitivity \(-2\)"),
        ({"sensitivity": 2**54}, ParameterError, r"^sensitivity \(18014398509481984\)"),
        ({"sensitivity": True}, ParameterTypeError, r"^sensitivity \(True\)"),
        ({"sensitivity": "2"}, ParameterTypeError, r"^sensitivity \('2'\)"),
        ({"dimension": 0}, ParameterError, r"^dimension \(0\) must be an integer >= 1"),
        ({"dimension": 2.0}, ParameterTypeError, r"^dimension \(2\.0\) must be an integer"),
        ({"sensitivity": 2**41}, ParameterError, r"^noise scale \(2199023255552\.0\).*2\*\*40"),
        ({"epsilon": 1e13, "allow_large_epsilon": True}, ParameterError, r"^noise scale"),
        ({"epsilon": 11.0}, ParameterError, r"^epsilon \(11\.0\).*allow_large_epsilon"),
    ],
)
def test_bad_parameters_are_one_line(kwargs: dict[str, Any], error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern) as info:
        DiscreteLaplaceMechanism(**{"epsilon": 1.0, "sensitivity": 1, **kwargs})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ([3, 123.5], "non-integer entries"),
        (123.5, "non-integer entries"),
        ([1.0, math.inf], "NaN or infinite"),
        (2**53 + 2, "beyond"),
        (np.array([2**60], dtype=np.int64), "beyond"),
        (np.array([2**63], dtype=np.uint64), "beyond"),
        (10**30, "dtype object"),
        (True, "not bool"),
        ([], "at least one"),
        ([[1, 2], [3]], "regular array"),
    ],
)
def test_bad_values_are_refused_without_echo(value: Any, pattern: str) -> None:
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1, dimension=4)
    with pytest.raises(DataValidationError, match=pattern) as info:
        mech.randomise(value, random_state=0)
    text = str(info.value)
    assert "\n" not in text and "123.5" not in text and "1152921504606846976" not in text


def test_more_coordinates_than_declared_is_refused_before_drawing() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1, dimension=2)
    source = resolve_random_state(0)
    before = source.uint64(1)
    source = resolve_random_state(0)
    with pytest.raises(ParameterError, match=r"^dimension \(2\) is smaller than the 3"):
        mech.randomise([1, 2, 3], random_state=source)
    assert np.array_equal(source.uint64(1), before)  # nothing was drawn


# -- what it promises -----------------------------------------------------------------------


def test_guarantee_event_and_ledger_details() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=2, dimension=3, relation="add/remove")
    assert mech.budget == PrivacyBudget(0.5)
    g = mech.guarantee
    assert g.epsilon == 0.5 and g.relation is Neighbouring.ADD_REMOVE
    assert "no grid" in str(g) and "sensitivity ≤ 2" in str(g)
    ev = mech.event
    assert ev == DiscreteLaplace(l1_sensitivity=2, scale=4.0, dimension=3, epsilon=0.5)
    assert mech.privacy_events() == (ev,)
    assert ev.budget() == PrivacyBudget(0.5)
    assert event_from_dict(json.loads(json.dumps(ev.to_dict()))) == ev
    assert ev.to_dict()["kind"] == "discrete-laplace"
    details = mech.ledger_details()
    assert details == {
        "sensitivity": 2,
        "norm": "l1",
        "noise": "discrete-laplace",
        "noise_scale": 4.0,
        "dimension": 3,
        "relation": "add/remove",
    }


def test_event_validation_and_stated_epsilon() -> None:
    # Without a stated ε basic composition charges Δ/b rounded up.
    assert DiscreteLaplace(l1_sensitivity=1, scale=3.0).budget().epsilon >= 1 / 3
    assert Fraction(DiscreteLaplace(l1_sensitivity=1, scale=3.0).budget().epsilon) >= Fraction(1, 3)
    with pytest.raises(ParameterError, match=r"^discrete-laplace\.epsilon \(0\.4\) is below"):
        DiscreteLaplace(l1_sensitivity=1, scale=2.0, epsilon=0.4)
    with pytest.raises(ParameterTypeError, match=r"^discrete-laplace\.l1_sensitivity \(1\.0\)"):
        DiscreteLaplace(l1_sensitivity=1.0, scale=2.0)
    with pytest.raises(ParameterError, match=r"^discrete-laplace\.scale \(0\.0\)"):
        DiscreteLaplace(l1_sensitivity=1, scale=0.0)
    # The PLD parameter a = 1/b is rounded up (less noise: conservative).
    ev = DiscreteLaplace(l1_sensitivity=1, scale=3.0)
    assert Fraction(ev.noise_parameter) >= Fraction(1) / Fraction(3.0)


def test_variance_is_that_of_the_two_sided_geometric() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1)
    q = math.exp(-1 / mech.scale)
    ks = np.arange(-400, 401)
    pmf = (1 - q) / (1 + q) * q ** np.abs(ks)
    assert mech.variance() == pytest.approx(float(np.sum(pmf * ks**2)), rel=1e-12)
    assert mech.bias() == 0.0


# -- the law of the noise -------------------------------------------------------------------


def _chi2_pvalue(draws: np.ndarray, scale: float) -> float:
    """χ² goodness of fit against P(k) = (1−q)/(1+q)·q^|k|, tails pooled (expected ≥ 5)."""
    q = math.exp(-1 / scale)
    c = (1 - q) / (1 + q)
    n = draws.size
    k_max = 1
    while n * c * q ** (k_max + 1) >= 5:
        k_max += 1
    ks = np.arange(-k_max, k_max + 1)
    tail = q ** (k_max + 1) / (1 + q)  # P(K > k_max) = P(K < −k_max)
    expected = np.concatenate([[tail], c * q ** np.abs(ks), [tail]]) * n
    counts = np.bincount(np.clip(draws, -k_max - 1, k_max + 1) + k_max + 1, minlength=ks.size + 2)
    assert counts.sum() == n and expected.sum() == pytest.approx(n, rel=1e-12)
    return float(chisquare(counts, expected).pvalue)


@pytest.mark.statistical
def test_noise_fits_the_exact_two_sided_geometric_pmf(seed: int) -> None:
    """The released noise has the discrete Laplace law (false-positive rate 1e-6).

    The same test on the law of 0.95× the scale (a broken calibration) rejects it: at
    400,000 draws its p-value is below 1e-170 (seeds 0-2), so the test has power.
    """
    mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1, dimension=GOF_DRAWS)
    out = mech.randomise(np.full(GOF_DRAWS, 7), random_state=seed) - 7
    assert _chi2_pvalue(out, mech.scale) > GOF_ALPHA
    broken = np.asarray(noise.discrete_laplace(0.95 * mech.scale, GOF_DRAWS, random_state=seed))
    assert _chi2_pvalue(broken, mech.scale) < GOF_ALPHA


# -- the audit and its broken variants ------------------------------------------------------


def test_discrete_laplace_is_a_builtin_audit() -> None:
    assert "discrete-laplace" in MECHANISMS


@pytest.mark.statistical
def test_audit_passes_and_half_scale_variant_fails(seed: int) -> None:
    outcome = audit_with_control("discrete-laplace", epsilon=1.0, random_state=seed)
    assert outcome.result.passed, str(outcome.result)
    assert outcome.control_failed, f"the audit is broken: {outcome.control}"
    # The event K ≤ 0 has ratio exactly e^ε, so the bound is tight, not vacuous (seeds
    # 0-99: 0.87-0.993, median 0.989), and the half-scale variant (really 2ε-DP) is caught
    # far above the claim (1.85-1.99).
    assert 0.8 < outcome.result.epsilon_lower_bound <= 1.0
    assert outcome.control.epsilon_lower_bound > 1.5


@pytest.mark.statistical
def test_audit_catches_twenty_percent_too_little_noise(seed: int) -> None:
    """0.8× the scale is 1.25ε-DP: bound 1.11-1.24 against the claim 1 (seeds 0-99).

    0.9× is caught 99 times in 100 (median bound 1.10): too close to certain for a test that
    must pass for every seed.
    """
    assert not audit_mechanism("discrete-laplace", noise_multiplier=0.8, random_state=seed).passed


@pytest.mark.statistical
def test_audit_catches_a_wrong_sensitivity(seed: int) -> None:
    """Declared Δ = 1 on a query that moves by 2: the pair (0, 2) breaks the claim ε."""
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1)
    on_zero = lambda n, src: mech._sample(0, n, src)  # noqa: E731
    result = audit(
        on_zero,
        lambda n, src: mech._sample(1, n, src),
        claimed_epsilon=1.0,
        n_select=20_000,
        n_measure=200_000,
        random_state=seed,
    )
    assert result.passed, str(result)
    wrong = audit(
        on_zero,
        lambda n, src: mech._sample(2, n, src),
        claimed_epsilon=1.0,
        n_select=20_000,
        n_measure=200_000,
        random_state=seed,
    )
    # Really 2ε-DP: bound 1.59-1.98 at these draws (seeds 0-99).
    assert not wrong.passed and wrong.epsilon_lower_bound > 1.4, str(wrong)


# -- composition ----------------------------------------------------------------------------


def test_basic_composition_charges_epsilon_per_release() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.25, sensitivity=1)
    with Accountant.in_memory(total=PrivacyBudget(1.0)) as acct:
        assert acct.fits_count(mech.event) == 4
        for _ in range(4):
            acct.spend(mech.event, mechanism=mech.name, **mech.ledger_details())
        with pytest.raises(BudgetExceededError):
            acct.spend(mech.event, mechanism=mech.name, **mech.ledger_details())
        assert acct.spent == PrivacyBudget(1.0)


def _hockey_stick(shift: int, scale: float, epsilon: float) -> float:
    """δ(ε) of the pair (DL(b), DL(b) + shift), summed over the integers exactly enough."""
    q = math.exp(-1 / scale)
    ks = np.arange(-2000, 2001)
    p0 = (1 - q) / (1 + q) * q ** np.abs(ks)
    p1 = (1 - q) / (1 + q) * q ** np.abs(ks - shift)
    return float(np.sum(np.maximum(p0 - math.exp(epsilon) * p1, 0.0)))


@pytest.mark.parametrize("scale", [0.7, 2.0, 5.0])
def test_a_smaller_shift_is_dominated_by_the_shift_by_delta(scale: float) -> None:
    """proofs/discrete-laplace.md §3: δ_s(ε) is nondecreasing in the shift s, for every ε ≥ 0.

    So the discrete Laplace PLD at sensitivity Δ covers every neighbour of a scalar query.
    """
    delta_f = 4
    for eps in np.linspace(0.0, delta_f / scale, 41):
        worst = _hockey_stick(delta_f, scale, eps)
        for s in range(1, delta_f):
            assert _hockey_stick(s, scale, eps) <= worst + 1e-15


def test_pld_is_dp_accountings_discrete_laplace_and_not_the_continuous_one() -> None:
    dpa = pytest.importorskip("dp_accounting")
    ev = DiscreteLaplaceMechanism(epsilon=0.4, sensitivity=2).event
    k, delta = 12, 1e-6
    ref = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    ref.compose(dpa.dp_event.DiscreteLaplaceDpEvent(ev.noise_parameter, 2), k)
    composer = make_composer("pld", delta)
    for _ in range(k):
        composer.add(ev)
    assert composer.tight_epsilon() == pytest.approx(ref.get_epsilon(delta), rel=1e-9)
    assert composer.epsilon() < k * 0.4  # tighter than basic composition
    # Accounted as a continuous Laplace event at the same ε, PLD would under-count: the
    # discrete law is less private than the continuous one at equal Δ/b (at Δ = 1 it is
    # randomised response). 50 releases at ε = 0.2, δ = 1e-5: 6.31 against 6.07.
    unit = DiscreteLaplaceMechanism(epsilon=0.2, sensitivity=1).event
    discrete, as_laplace = make_composer("pld", 1e-5), make_composer("pld", 1e-5)
    for _ in range(50):
        discrete.add(unit)
        as_laplace.add(Laplace(l1_sensitivity=1.0, scale=unit.scale))
    assert discrete.tight_epsilon() > as_laplace.tight_epsilon() + 0.2


def test_pld_of_a_vector_with_delta_above_one_is_the_worst_pure_pair() -> None:
    dpa = pytest.importorskip("dp_accounting")
    pld = dpa.pld.privacy_loss_distribution
    vec = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=2, dimension=10).event
    unit = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1, dimension=10).event
    assert not vec.exact_pld and unit.exact_pld
    params = dpa.pld.common.DifferentialPrivacyParameters(0.5, 0.0)
    worst = pld.from_privacy_parameters(params, value_discretization_interval=1e-4)
    ref = worst.self_compose(6).get_epsilon_for_delta(1e-6)
    for ev in (vec, unit):  # at Δ = 1 the discrete Laplace pair *is* the worst ε-DP pair
        composer = make_composer("pld", 1e-6)
        for _ in range(6):
            composer.add(ev)
        assert composer.tight_epsilon() == pytest.approx(ref, abs=1e-6)


def test_rdp_uses_the_pure_epsilon_zcdp_bound_and_the_accountant_takes_it() -> None:
    dpa = pytest.importorskip("dp_accounting")
    ev = DiscreteLaplaceMechanism(epsilon=0.01, sensitivity=3).event
    ref = dpa.rdp.RdpAccountant()
    ref.compose(dpa.dp_event.ZCDpEvent(0.01**2 / 2), 400)
    composer = make_composer("rdp", 1e-6)
    for _ in range(400):
        composer.add(ev)
    assert composer.tight_epsilon() == pytest.approx(ref.get_epsilon(1e-6), rel=1e-9)
    with Accountant.in_memory(total=PrivacyBudget(1.0, 1e-6), composition="rdp") as acct:
        fits = acct.fits_count(ev)
        assert fits > 100  # more than basic composition admits (measured: 487)
        for _ in range(fits):
            acct.spend(ev, mechanism="DiscreteLaplace")
        with pytest.raises(BudgetExceededError):
            acct.spend(ev, mechanism="DiscreteLaplace")
