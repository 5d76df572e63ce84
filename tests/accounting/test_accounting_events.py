"""Typed privacy events (issue 17): validation, canonical JSON, basic (ε, δ), what composes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.accounting.events import (
    Composed,
    EpsilonDelta,
    Exponential,
    GammaNorm,
    Gaussian,
    Laplace,
    LocalRandomizer,
    ObjectivePerturbation,
    Parallel,
    PermuteAndFlip,
    PrivacyEvent,
    Pufferfish,
    as_event,
    event_from_dict,
)
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import ParameterError, PPDPError, UnsupportedEventError
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism

pos = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


def _examples() -> list[PrivacyEvent]:
    g = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=2.0, dimension=4)
    return [
        EpsilonDelta(epsilon=0.3, delta=1e-7),
        Laplace(l1_sensitivity=1.0, scale=2.0, dimension=3, granularity=2.0**-30),
        g.event,
        Gaussian(l2_sensitivity=1.0, sigma=3.0),
        Exponential(epsilon=0.2),
        PermuteAndFlip(epsilon=0.2),
        GammaNorm(l2_sensitivity=0.1, scale=0.5, dimension=5),
        ObjectivePerturbation(epsilon=1.0),
        LocalRandomizer(epsilon=1.0, randomizer="additive"),
        Pufferfish(epsilon=0.5, mechanism="MQM"),
        Composed(events=(Exponential(epsilon=0.1), Laplace(l1_sensitivity=1.0, scale=10.0))),
        Parallel(events=(Exponential(epsilon=0.1), Exponential(epsilon=0.3))),
    ]


@pytest.mark.parametrize("event", _examples(), ids=lambda e: e.kind)
def test_every_event_round_trips_through_its_canonical_json(event):
    import json

    data = json.loads(json.dumps(event.to_dict()))
    assert event_from_dict(data) == event
    assert event_from_dict(data).to_dict() == event.to_dict()


@given(pos, pos, st.integers(1, 100), st.sampled_from([0.0, 2.0**-40, 2.0**-20]))
@settings(max_examples=60, deadline=None)
def test_laplace_round_trip_and_basic_epsilon_covers_the_effective_sensitivity(s, b, d, lam):
    ev = Laplace(l1_sensitivity=s, scale=b, dimension=d, granularity=lam)
    assert event_from_dict(ev.to_dict()) == ev
    from fractions import Fraction

    assert Fraction(ev.budget().epsilon) >= (Fraction(s) + d * Fraction(lam)) / Fraction(b)
    assert Fraction(ev.noise_multiplier) <= Fraction(b) / (Fraction(s) + d * Fraction(lam))


def test_mechanism_events_describe_the_grid_slack_and_charge_the_stated_epsilon():
    lap = LaplaceMechanism(epsilon=0.7, sensitivity=3.0, dimension=10)
    ev = lap.event
    assert ev.budget() == lap.budget
    assert ev.granularity == lap.granularity and ev.dimension == 10
    assert float(ev.effective_sensitivity) >= 3.0 + 10 * lap.granularity
    g = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=2.0, dimension=7)
    assert g.event.budget() == g.budget
    assert g.event.noise_multiplier <= g.sigma / 2.0  # the slack makes it smaller


def test_a_stated_epsilon_below_the_noise_is_refused():
    with pytest.raises(ParameterError, match=r"laplace\.epsilon \(0\.4\)"):
        Laplace(l1_sensitivity=1.0, scale=2.0, epsilon=0.4)  # the noise gives 0.5
    with pytest.raises(ParameterError, match=r"gaussian\.delta"):
        Gaussian(l2_sensitivity=1.0, sigma=1.0, epsilon=0.1, delta=1e-6)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: Laplace(l1_sensitivity=-1.0, scale=1.0), "laplace.l1_sensitivity"),
        (lambda: Laplace(l1_sensitivity=1.0, scale=0.0), "laplace.scale"),
        (lambda: Gaussian(l2_sensitivity=1.0, sigma=math.nan), "gaussian.sigma"),
        (lambda: Gaussian(l2_sensitivity=1.0, sigma=1.0, epsilon=1.0), "gaussian.epsilon"),
        (lambda: Exponential(epsilon=-0.1), "exponential.epsilon"),
        (lambda: EpsilonDelta(epsilon=1.0, delta=1.5), "epsilon-delta.delta"),
        (lambda: GammaNorm(l2_sensitivity=1.0, scale=1.0, dimension=0), "gamma-norm.dimension"),
        (lambda: Composed(events=()), "composed.events"),
        (lambda: event_from_dict({"kind": "laplace", "scale": 1.0}), "laplace"),
        (lambda: event_from_dict({"kind": "nope"}), "event kind"),
    ],
)
def test_bad_parameters_are_one_clear_line(make, name):
    with pytest.raises(PPDPError) as info:
        make()
    text = str(info.value)
    assert name in text and "\n" not in text


def test_basic_budgets_of_composed_and_parallel_events():
    a, b = EpsilonDelta(epsilon=0.1, delta=1e-6), EpsilonDelta(epsilon=0.2, delta=2e-6)
    assert Composed(events=(a, b)).budget() == PrivacyBudget(0.30000000000000004, 3e-6) or (
        Composed(events=(a, b)).budget().epsilon >= 0.3
    )
    assert Composed(events=(a, b, a)).budget().epsilon >= 0.4
    assert Parallel(events=(a, b)).budget() == PrivacyBudget(0.2, 2e-6)
    assert as_event([a]) == a and as_event(PrivacyBudget(0.5)) == EpsilonDelta(epsilon=0.5)


def test_which_composition_can_take_which_event():
    assert Pufferfish(epsilon=1.0).compositions == ("basic",)
    with pytest.raises(UnsupportedEventError, match="'basic'"):
        Pufferfish(epsilon=1.0).require("pld")
    assert not ObjectivePerturbation(epsilon=1.0, delta=1e-6).supports("rdp")
    assert ObjectivePerturbation(epsilon=1.0).supports("rdp")
    bare = Gaussian(l2_sensitivity=1.0, sigma=3.0)
    assert bare.compositions == ("pld", "rdp")
    with pytest.raises(UnsupportedEventError, match="'pld' or 'rdp'"):
        bare.budget()
    mixed = Parallel(events=(Exponential(epsilon=0.1), Exponential(epsilon=0.3)))
    assert mixed.compositions == ("basic", "pld", "rdp")  # as its envelope, ε = 0.3
    assert mixed.envelope() == EpsilonDelta(epsilon=0.3)
    approx = Parallel(events=(Exponential(epsilon=0.1), EpsilonDelta(epsilon=0.1, delta=1e-6)))
    assert approx.compositions == ("basic", "pld")  # RDP takes no δ
    same = Parallel(events=(Exponential(epsilon=0.1), Exponential(epsilon=0.1)))
    assert same.compositions == ("basic", "pld", "rdp")
