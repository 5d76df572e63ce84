"""Composition (issue 17): basic, PLD and RDP accountants over typed events.

The PLD and RDP totals are checked against ``dp-accounting`` computed directly (to 1e-9);
a Hypothesis property checks that no sequence of spends ever takes the composed total past
the limit, under any composition; bad input is one line and charges nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.accounting import Accountant, budget_report
from ppdp.accounting._tally import accountant_metadata
from ppdp.accounting.events import (
    Composed,
    EpsilonDelta,
    Exponential,
    Gaussian,
    Laplace,
    ObjectivePerturbation,
    Pufferfish,
)
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import BudgetExceededError, ParameterError, UnsupportedEventError
from ppdp.ledger import Ledger, Signer
from ppdp.mechanisms import GaussianMechanism

dpa = pytest.importorskip("dp_accounting")

TARGET = PrivacyBudget(4.0, 1e-5)


def _pld_direct(multipliers: list[tuple[str, float]], delta: float) -> float:
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    for kind, nm in multipliers:
        ev = dpa.GaussianDpEvent(nm) if kind == "g" else dpa.LaplaceDpEvent(nm)
        acc.compose(ev)
    return acc.get_epsilon(delta)


def _rdp_direct(multipliers: list[tuple[str, float]], delta: float) -> float:
    acc = dpa.rdp.RdpAccountant()
    for kind, nm in multipliers:
        ev = dpa.GaussianDpEvent(nm) if kind == "g" else dpa.LaplaceDpEvent(nm)
        acc.compose(ev)
    return acc.get_epsilon(delta)


def test_pld_and_rdp_totals_agree_with_dp_accounting_computed_directly():
    g = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0).event
    lap = Laplace(l1_sensitivity=2.0, scale=8.0, dimension=3, granularity=2.0**-30)
    seq = [g, lap, g, g, lap]
    direct = [("g" if isinstance(e, Gaussian) else "l", e.noise_multiplier) for e in seq]
    basic = sum(e.budget().epsilon for e in seq)  # δ sums to 3e-6 <= 1e-5: also a bound
    for composition, reference in (("pld", _pld_direct), ("rdp", _rdp_direct)):
        with Accountant.in_memory(total=PrivacyBudget(20.0, 1e-5), composition=composition) as a:
            for e in seq:
                a.spend(e, mechanism="m")
            ours = a.spent.epsilon
            assert a.spent.delta == 1e-5
        expected = min(reference(direct, 1e-5), basic)
        assert ours == pytest.approx(expected, rel=0, abs=1e-9)
    # Many releases: the library's bound is the smaller one, and ours is exactly it.
    many = [g] * 30
    direct = [("g", g.noise_multiplier)] * 30
    for composition, reference in (("pld", _pld_direct), ("rdp", _rdp_direct)):
        with Accountant.in_memory(total=PrivacyBudget(20.0, 1e-5), composition=composition) as a:
            a.spend(Composed(events=tuple(many)), mechanism="m")
            ours = a.spent.epsilon
        ref = reference(direct, 1e-5)
        assert ref < 15.0  # basic: 30 × 0.5
        assert ours == pytest.approx(ref, rel=0, abs=1e-9)


def test_tight_compositions_never_admit_fewer_releases_than_basic():
    # RDP's ε²/2-zCDP view of a pure ε is loose for few releases; the basic bound is kept.
    ev = ObjectivePerturbation(epsilon=0.5)
    for composition in ("pld", "rdp"):
        with Accountant.in_memory(total=TARGET, composition=composition) as a:
            assert a.fits_count(ev) >= 8


def test_pld_of_pure_events_is_the_composed_worst_case_pld():
    pld = dpa.pld.privacy_loss_distribution
    params = dpa.pld.common.DifferentialPrivacyParameters(0.3, 0.0)
    ref = pld.identity(value_discretization_interval=1e-4)
    for _ in range(10):
        ref = ref.compose(pld.from_privacy_parameters(params, value_discretization_interval=1e-4))
    with Accountant.in_memory(total=TARGET, composition="pld") as a:
        for _ in range(10):
            a.spend(Exponential(epsilon=0.3), mechanism="select")
        assert a.spent.epsilon == pytest.approx(ref.get_epsilon_for_delta(1e-5), abs=1e-9)
        assert a.spent.epsilon < 3.0  # tighter than basic composition's 10 × 0.3


def test_the_issue_example_twenty_gaussians_of_multiplier_three():
    ev = Gaussian(l2_sensitivity=1.0, sigma=3.0)
    with Accountant.in_memory(total=PrivacyBudget(8.0, 1e-6), composition="pld") as a:
        assert a.fits_count(ev) >= 20
        for _ in range(20):
            a.spend(ev, mechanism="g")
        assert a.spent.epsilon == pytest.approx(7.7499, abs=1e-3)  # issue 17: 7.7


@pytest.mark.parametrize("composition", ["basic", "pld", "rdp"])
def test_a_spend_that_would_exceed_is_refused_and_nothing_is_charged(composition):
    ev = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0).event
    with Accountant.in_memory(total=TARGET, composition=composition) as a:
        n = a.fits_count(ev)
        for _ in range(n):
            a.spend(ev, mechanism="g")
        before = a.history()
        with pytest.raises(BudgetExceededError) as info:
            a.spend(ev, mechanism="g")
        assert "\n" not in str(info.value) and "nothing was charged" in str(info.value)
        assert a.history() == before
        assert a.would_exceed(ev)
        assert a.spent.epsilon <= TARGET.epsilon and a.spent.delta <= TARGET.delta
    if composition == "basic":
        assert n == 8  # 8 × (0.5, 1e-6) fill (4, 1e-5)
    else:
        assert n > 8  # tight composition fits more of the same releases


events_strategy = st.lists(
    st.one_of(
        st.builds(lambda e: EpsilonDelta(epsilon=e), st.floats(0.05, 1.5)),
        st.builds(lambda s: Laplace(l1_sensitivity=1.0, scale=s), st.floats(0.5, 20.0)),
        st.builds(
            lambda e: GaussianMechanism(epsilon=e, delta=1e-7, sensitivity=1.0).event,
            st.sampled_from([0.25, 0.5, 1.0, 2.0]),
        ),
    ),
    min_size=1,
    max_size=12,
)


@given(events=events_strategy, composition=st.sampled_from(["basic", "pld", "rdp"]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_limit_is_never_exceeded_under_any_composition(events, composition):
    total = PrivacyBudget(3.0, 1e-5)
    with Accountant.in_memory(total=total, composition=composition) as a:
        charged = []
        for e in events:
            try:
                a.spend(e, mechanism="m")
                charged.append(e)
            except BudgetExceededError:
                pass
        assert len(a.history()) == len(charged)
    if composition == "basic":
        assert sum(e.budget().epsilon for e in charged) <= 3.0 + 1e-12
        assert sum(e.budget().delta for e in charged) <= 1e-5
        return
    # Recompute independently with dp-accounting: the charged events compose to <= 3.
    if composition == "rdp":
        acc = dpa.rdp.RdpAccountant()
    else:
        acc = None
        pld = dpa.pld.privacy_loss_distribution
        state = pld.identity(value_discretization_interval=1e-4)
    for e in charged:
        if isinstance(e, Gaussian):
            dp_ev = dpa.GaussianDpEvent(e.noise_multiplier)
        elif isinstance(e, Laplace):
            dp_ev = dpa.LaplaceDpEvent(e.noise_multiplier)
        else:
            dp_ev = None
        if acc is not None:
            acc.compose(dp_ev if dp_ev is not None else dpa.ZCDpEvent(e.epsilon**2 / 2))
        elif dp_ev is not None:
            one = dpa.pld.PLDAccountant()
            one.compose(dp_ev)
            state = state.compose(one._pld)
        else:
            params = dpa.pld.common.DifferentialPrivacyParameters(e.epsilon, 0.0)
            state = state.compose(pld.from_privacy_parameters(params))
    eps = acc.get_epsilon(1e-5) if acc is not None else state.get_epsilon_for_delta(1e-5)
    # Basic composition is also a valid bound when the δ sum fits (the accountant uses both).
    if sum(e.budget().delta for e in charged) <= 1e-5:
        eps = min(eps, sum(e.budget().epsilon for e in charged))
    assert eps <= 3.0 + 1e-12


def test_the_composition_is_pinned_and_reopening_reports_the_same_totals(tmp_path):
    path = tmp_path / "b.db"
    ev = Gaussian(l2_sensitivity=1.0, sigma=4.0)
    with Accountant.open(path, dataset_id="d", total=TARGET, composition="rdp") as a:
        a.spend(ev, mechanism="g")
        a.spend(ev, mechanism="g")
        spent = a.spent
    with Accountant.open(path, dataset_id="d", total=TARGET, composition="rdp") as a:
        assert a.composition == "rdp" and a.spent == spent
        assert [r.event for r in a.history()] == [ev, ev]
    with Accountant.open_existing(path) as a:
        assert a.composition == "rdp"
    report = budget_report(path)
    assert report.composition == "rdp" and report.spent == spent
    with pytest.raises(ParameterError) as info:
        Accountant.open(path, dataset_id="d", total=TARGET, composition="pld")
    assert "composition ('pld') differs" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ParameterError, match=r"composition \('basic'\) differs"):
        Accountant.open(path, dataset_id="d", total=TARGET, composition="basic")
    # not naming one opens the ledger under its pinned composition
    with Accountant.open(path, dataset_id="d", total=TARGET) as a:
        assert a.composition == "rdp" and a.spent == spent


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"composition": "advanced"}, r"composition \('advanced'\) must be one of"),
        ({"composition": "pld", "total": PrivacyBudget(4.0)}, r"total \(ε=4\) has no δ"),
        ({"composition": "rdp", "total": PrivacyBudget(4.0)}, r"has no δ"),
    ],
)
def test_bad_composition_arguments_are_one_line_and_create_nothing(tmp_path, kwargs, match):
    path = tmp_path / "b.db"
    args = {"dataset_id": "d", "total": TARGET, **kwargs}
    with pytest.raises(ParameterError, match=match) as info:
        Accountant.open(path, **args)
    assert "\n" not in str(info.value)
    assert not path.exists()


def test_unsupported_events_name_the_composition_that_can_and_charge_nothing():
    with Accountant.in_memory(total=TARGET, composition="pld") as a:
        with pytest.raises(UnsupportedEventError, match="composition 'basic' can"):
            a.spend(Pufferfish(epsilon=0.5), mechanism="mqm")
        assert a.history() == []
    with Accountant.in_memory(total=TARGET, composition="rdp") as a:
        with pytest.raises(UnsupportedEventError, match="'basic' or 'pld'"):
            a.spend(ObjectivePerturbation(epsilon=0.5, delta=1e-7), mechanism="erm")
        with pytest.raises(UnsupportedEventError):
            a.spend(PrivacyBudget(0.5, 1e-7), mechanism="bare")
        assert a.history() == []
    with Accountant.in_memory(total=TARGET) as a:
        with pytest.raises(UnsupportedEventError, match="'pld' or 'rdp'"):
            a.spend(Gaussian(l2_sensitivity=1.0, sigma=3.0), mechanism="g")
        assert a.history() == []


def test_negative_parameters_are_refused_before_anything_is_charged():
    with Accountant.in_memory(total=TARGET, composition="pld") as a:
        with pytest.raises(ParameterError, match=r"gaussian\.sigma \(-1\.0\)"):
            a.spend(Gaussian(l2_sensitivity=1.0, sigma=-1.0), mechanism="g")
        assert a.history() == []


def test_a_ledger_without_typed_events_reads_as_basic_with_the_same_totals(tmp_path):
    # The payload an accountant wrote before issue 17: no "event" field.
    path = tmp_path / "old.db"
    signer = Signer.generate("custodian")
    meta = accountant_metadata(PrivacyBudget(1.0, 1e-6), Neighbouring.REPLACE_ONE)
    with Ledger.create(
        path, signer=signer, dataset_id="old", purpose="privacy budget", metadata=meta
    ) as led:
        for eps, delta in ((0.1, 0.0), (0.2, 1e-7), (0.3, 0.0)):
            led.append(
                "spend",
                {
                    "mechanism": "old",
                    "epsilon": eps,
                    "delta": delta,
                    "relation": "replace-one",
                    "seeded": False,
                    "idempotency_key": None,
                    "details": {"sensitivity": 1.0},
                    "composition": "basic",
                },
            )
    report = budget_report(path)
    assert report.composition == "basic"
    assert report.spent == PrivacyBudget(0.6, 1e-7)
    assert report.spends[1].event == EpsilonDelta(epsilon=0.2, delta=1e-7)
    assert report.spends[0].details == {"sensitivity": 1.0}
    with Accountant.open(path, dataset_id="old", total=PrivacyBudget(1.0, 1e-6), key=signer) as a:
        assert a.composition == "basic"
        assert a.remaining == PrivacyBudget(0.4, 9e-7)
        a.spend(
            Composed(events=(Exponential(epsilon=0.1), Exponential(epsilon=0.2))), mechanism="n"
        )
        assert a.spent.epsilon == pytest.approx(0.9)


@pytest.mark.parametrize("composition", ["basic", "pld", "rdp"])
def test_the_accountant_states_the_composed_guarantee(composition):
    g = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0).event
    with Accountant.in_memory(total=TARGET, composition=composition) as a:
        for _ in range(6):
            a.spend(g, mechanism="g")
        guarantee = a.guarantee
        assert guarantee.epsilon == a.spent.epsilon and guarantee.delta == a.spent.delta
        assert guarantee.details["composition"] == composition
    if composition == "basic":
        assert (guarantee.epsilon, guarantee.delta) == (3.0, 6e-6)
    else:
        assert guarantee.epsilon < 3.0 and guarantee.delta == 1e-5
