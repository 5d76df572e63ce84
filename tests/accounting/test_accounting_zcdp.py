"""The zCDP event (issue 31): what it states, how RDP and PLD compose it, and the
TableSynthesizer charging it on every ledger kind (``ppdp publish synth`` included)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.accounting.events import (
    ZCDP,
    Composed,
    EpsilonDelta,
    Exponential,
    Gaussian,
    Pufferfish,
    event_from_dict,
    zcdp_rho_of,
)
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import BudgetExceededError, ParameterError, UnsupportedEventError
from ppdp.mechanisms.calibration import gaussian_delta, zcdp_delta
from ppdp.publish import TableSynthesizer
from ppdp.publish.table_synth import zcdp_event

dpa = pytest.importorskip("dp_accounting")

TOTAL = PrivacyBudget(4.0, 1e-5)
ORDERS = dpa.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS


def _rdp_epsilon(rho: float, delta: float) -> float:
    """ε at ``delta`` of ρ-zCDP, i.e. RDP ``αρ``, with the conversion of Canonne, Kamath &
    Steinke 2020 (Prop. 12) minimised over the library's orders: the closed form."""
    return min(
        a * rho + math.log1p(-1.0 / a) - math.log(delta * a) / (a - 1.0) for a in ORDERS if a > 1.01
    )


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact ε at ``delta`` of a Gaussian with Δ/σ = ``mu`` (Balle & Wang 2018, Thm 8)."""
    lo, hi = 0.0, 50.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if gaussian_delta(1.0, mid, mu) <= delta else (mid, hi)
    return hi


def _schema() -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "categorical", "categories": ["x", "y"]},
                {"name": "b", "type": "categorical", "categories": ["u", "v", "w"]},
                {"name": "d", "type": "categorical", "categories": ["s", "t"]},
            ],
            "label": {"name": "c", "classes": ["p", "q"]},
        }
    )


def _data(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y"], n)
    return pd.DataFrame(
        {
            "a": a,
            "b": rng.choice(["u", "v", "w"], n),
            "d": np.where(rng.random(n) < 0.8, np.where(a == "x", "s", "t"), "s"),
            "c": rng.choice(["p", "q"], n),
        }
    )


# ------------------------------------------------------------------------------ the event


def test_the_event_round_trips_and_says_which_composition_takes_it():
    bare = ZCDP(rho=0.02)
    assert bare.compositions == ("rdp",)
    with pytest.raises(UnsupportedEventError, match="'rdp'"):
        bare.budget()
    stated = ZCDP(rho=0.01497, epsilon=1.0, delta=1e-9)
    assert stated.compositions == ("basic", "pld", "rdp")
    assert stated.budget() == PrivacyBudget(1.0, 1e-9)
    draws = ZCDP(rho=0.02, events=(Gaussian(l2_sensitivity=1.0, sigma=10.0),))
    assert draws.compositions == ("pld", "rdp")
    for ev in (bare, stated, draws):
        assert event_from_dict(ev.to_dict()) == ev
    assert "2 draws" in ZCDP(rho=1.0, events=(Exponential(epsilon=0.1),) * 2).describe()


def test_the_stated_pair_and_the_draws_are_checked_in_one_line():
    assert zcdp_delta(0.01497, 1.0) <= 1e-9 < zcdp_delta(0.0151, 1.0)
    cases = [
        (lambda: ZCDP(rho=0.0151, epsilon=1.0, delta=1e-9), r"zcdp\.delta \(1e-09\) is below"),
        (lambda: ZCDP(rho=0.01, epsilon=1.0), r"zcdp\.epsilon \(1\.0\) and zcdp\.delta"),
        (lambda: ZCDP(rho=0.0), r"zcdp\.rho \(0\.0\)"),
        # Gaussian Δ = 1, σ = 5: ρ = 1/50 = 0.02 > 0.019.
        (
            lambda: ZCDP(rho=0.019, events=(Gaussian(l2_sensitivity=1.0, sigma=5.0),)),
            r"zcdp\.rho \(0\.019\) is below the ρ \(0\.02\)",
        ),
        (lambda: ZCDP(rho=1.0, events=(Pufferfish(epsilon=0.1),)), "no zCDP bound"),
        (lambda: ZCDP(rho=1.0, events=(EpsilonDelta(epsilon=0.1, delta=1e-9),)), "no zCDP"),
        (lambda: ZCDP(rho=1.0, events=(Composed(events=(Exponential(epsilon=0.1),)),)), "no zC"),
    ]
    for make, message in cases:
        with pytest.raises(ParameterError, match=message) as info:
            make()
        assert "\n" not in str(info.value)


def test_each_draw_costs_its_own_zcdp_rho():
    assert zcdp_rho_of(Gaussian(l2_sensitivity=2.0, sigma=4.0)) == 0.125  # Δ²/(2σ²)
    assert zcdp_rho_of(Exponential(epsilon=0.4)) == pytest.approx(0.02, rel=1e-15)  # ε²/8
    assert zcdp_rho_of(EpsilonDelta(epsilon=0.4)) == pytest.approx(0.08, rel=1e-15)  # ε²/2
    draws = (Gaussian(l2_sensitivity=2.0, sigma=4.0), Exponential(epsilon=0.4))
    assert ZCDP(rho=0.145, events=draws).events == draws  # their sum: accepted
    with pytest.raises(ParameterError, match="below the ρ"):
        ZCDP(rho=0.144, events=draws)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_k_zcdp_events_on_an_rdp_ledger_compose_to_k_rho(tmp_path, k):
    rho = 0.01
    with Accountant.open(tmp_path / "b.db", dataset_id="d", total=TOTAL, composition="rdp") as a:
        for _ in range(k):
            a.spend(ZCDP(rho=rho), mechanism="zcdp")
        spent = a.spent
    assert spent.delta == TOTAL.delta
    assert spent.epsilon == pytest.approx(_rdp_epsilon(k * rho, TOTAL.delta), rel=1e-9)
    # Below Bun & Steinke's kρ + 2√(kρ·ln 1/δ), which the conversion improves on.
    assert spent.epsilon < k * rho + 2 * math.sqrt(k * rho * math.log(1 / TOTAL.delta))


# -------------------------------------------------------------------- the TableSynthesizer


def test_one_round_of_tables_is_one_gaussian_with_the_same_privacy_loss():
    sens, sigma, k = math.sqrt(2.0), 20.0, 9
    joint = Gaussian(l2_sensitivity=math.sqrt(2.0 * k), sigma=sigma)
    one = dpa.pld.privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=sigma / sens, value_discretization_interval=1e-4
    )
    tables = one.self_compose(k).get_epsilon_for_delta(1e-6)
    grouped = dpa.pld.privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=joint.noise_multiplier, value_discretization_interval=1e-4
    ).get_epsilon_for_delta(1e-6)
    exact = _gaussian_epsilon(math.sqrt(k) * sens / sigma, 1e-6)
    assert exact <= grouped <= exact * 1.001 and exact <= tables <= exact * 1.003
    assert zcdp_rho_of(joint) == pytest.approx(
        k * zcdp_rho_of(Gaussian(l2_sensitivity=sens, sigma=sigma)), rel=1e-12
    )


@pytest.mark.parametrize("method", ["tree", "chow-liu", "pairs"])
@pytest.mark.parametrize(
    "options",
    [
        {"binning": "private-quantiles"},
        {"decode": "sub-bins"},
        {"decode": "sub-bins", "check_pairs": 0},
    ],
)
def test_the_synth_event_states_its_plan(method, options):
    """The event lists every draw of the plan (tables, sub-bin histograms, edge choices, the
    pair check's choices and residuals): a draw left out would be composed as if free on a
    PLD ledger (the merge of the pair check and the sub-bins once left both out)."""
    synth = TableSynthesizer(1.0, _schema(), method=method, **options)
    plan = synth.plan()
    event = synth._charges(plan, 300)[0].event
    assert isinstance(event, ZCDP) and event.rho == plan.rho
    assert event.budget() == PrivacyBudget(1.0, 1e-9)
    assert sum(zcdp_rho_of(e) for e in event.events) == pytest.approx(plan.spent_rho(), rel=1e-9)
    assert plan.spent_rho() == pytest.approx(plan.rho, rel=1e-9)  # nothing planned is left out
    exps = [e for e in event.events if isinstance(e, Exponential)]
    checks = plan.check_pairs if plan.check is not None else 0
    assert len(exps) == plan.n_select + checks
    assert all(e.epsilon == plan.epsilon_select for e in exps[: plan.n_select])
    assert event.compositions == ("basic", "pld", "rdp")


def test_synth_fits_on_an_rdp_ledger_compose_to_k_rho(tmp_path):
    k = 3
    with Accountant.open(tmp_path / "b.db", dataset_id="d", total=TOTAL, composition="rdp") as a:
        for i in range(k):
            synth = TableSynthesizer(1.0, _schema(), method="tree", random_state=i)
            synth.fit(_data(), accountant=a, allow_seeded=True)
        spent = a.spent
    rho = synth.plan().rho
    records = budget_report(tmp_path / "b.db").spends
    assert [r.event.kind for r in records] == ["zcdp"] * k
    assert all(r.event.rho == rho and r.budget == PrivacyBudget(1.0, 1e-9) for r in records)
    assert spent.epsilon == pytest.approx(_rdp_epsilon(k * rho, TOTAL.delta), rel=1e-6)
    assert spent.epsilon < k * 1.0  # tighter than basic composition's sum


def test_synth_fits_on_a_pld_ledger_compose_their_draws(tmp_path):
    k = 3
    pld = dpa.pld.privacy_loss_distribution
    with Accountant.open(tmp_path / "b.db", dataset_id="d", total=TOTAL, composition="pld") as a:
        for i in range(k):
            synth = TableSynthesizer(1.0, _schema(), method="tree", random_state=i)
            synth.fit(_data(), accountant=a, allow_seeded=True)
        spent = a.spent
    event = zcdp_event(synth.plan(), 1.0, 1e-9)
    direct = pld.identity(value_discretization_interval=1e-4)
    for draw in event.events * k:
        if isinstance(draw, Gaussian):
            one = pld.from_gaussian_mechanism(
                standard_deviation=draw.noise_multiplier, value_discretization_interval=1e-4
            )
        else:
            params = dpa.pld.common.DifferentialPrivacyParameters(draw.epsilon, 0.0)
            one = pld.from_privacy_parameters(params, value_discretization_interval=1e-4)
        direct = direct.compose(one)
    assert spent.epsilon == pytest.approx(direct.get_epsilon_for_delta(TOTAL.delta), rel=1e-9)
    assert spent.epsilon < k * 1.0
    # Sound: never below the exact ε of the Gaussian draws alone (k fits, μ = √(kΣμᵢ²)).
    gauss = [d for d in event.events if isinstance(d, Gaussian)]
    mu = math.sqrt(k * sum(1.0 / d.noise_multiplier**2 for d in gauss))
    assert spent.epsilon >= _gaussian_epsilon(mu, TOTAL.delta)


def test_pairs_synth_on_a_pld_ledger_is_the_exact_gaussian(tmp_path):
    k = 4
    with Accountant.open(tmp_path / "b.db", dataset_id="d", total=TOTAL, composition="pld") as a:
        for i in range(k):
            synth = TableSynthesizer(1.0, _schema(), method="pairs", random_state=i)
            synth.fit(_data(), accountant=a, allow_seeded=True)
        spent = a.spent
    plan = synth.plan()
    # k fits of len(first) tables each, every one Δ/σ: one Gaussian of μ = √(k·m)·Δ/σ.
    mu = math.sqrt(k * len(plan.first)) * plan.table_sensitivity / plan.sigma_first
    exact = _gaussian_epsilon(mu, TOTAL.delta)
    assert exact <= spent.epsilon <= exact * 1.002


@pytest.mark.parametrize("composition", ["pld", "rdp"])
def test_a_refused_synth_overdraft_leaves_the_ledger_unchanged(tmp_path, composition):
    total = PrivacyBudget(0.85, 1e-5)  # one fit at ε = 1 composes to ~0.68, two to ~0.99
    path = tmp_path / "b.db"
    with Accountant.open(path, dataset_id="d", total=total, composition=composition) as a:
        TableSynthesizer(1.0, _schema(), random_state=0).fit(
            _data(), accountant=a, allow_seeded=True
        )
        spent, history, entries = a.spent, a.history(), a.events()
        synth = TableSynthesizer(1.0, _schema(), random_state=1)
        with pytest.raises(BudgetExceededError):
            synth.fit(_data(), accountant=a, allow_seeded=True)
        assert a.spent == spent and a.history() == history and a.events() == entries
    assert not hasattr(synth, "release_")
    assert len(budget_report(path).spends) == 1


@pytest.mark.parametrize("composition", ["basic", "pld", "rdp"])
def test_publish_synth_works_on_every_ledger_kind(tmp_path, capsys, composition):
    data, schema, ledger = tmp_path / "d.csv", tmp_path / "s.json", tmp_path / "b.db"
    _data().to_csv(data, index=False)
    _schema().to_file(schema)
    init = ["budget", "init", str(ledger), "--dataset-id", "d", "--epsilon", "4"]
    assert main([*init, "--delta", "1e-5", "--composition", composition]) == 0
    argv = ["publish", "synth", str(data), "--schema", str(schema), "--epsilon", "1"]
    argv += ["-o", str(tmp_path / "o.csv"), "--ledger", str(ledger), "--seed", "3"]
    assert main([*argv, "--allow-seeded", "-q"]) == 0
    report = budget_report(ledger)
    assert [s.event.kind for s in report.spends] == ["zcdp"]
    basic = report.spends[0].budget
    assert basic == PrivacyBudget(1.0, 1e-9)
    if composition == "basic":
        assert report.spent == basic
    else:  # tight: one fit costs less than its stated ε at the ledger's δ
        assert 0.0 < report.spent.epsilon < 1.0 and report.spent.delta == 1e-5
    assert len(pd.read_csv(tmp_path / "o.csv")) == 300
