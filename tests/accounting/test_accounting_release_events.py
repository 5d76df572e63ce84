"""The typed events charged by the ERM learners, the RBF SVM, the EXP baseline and a
Mul-LDA-DP round describe the noise those releases draw (issue 17).

Each test intercepts the draws (``ppdp.noise.gamma_norm_vector``, the truncated-Laplace
sampler) or reads the mechanism the release runs, and checks the ledger's event against them;
under PLD/RDP the composed total agrees with ``dp-accounting`` computed directly to 1e-9
where the library's bound is the smaller one (otherwise basic composition's sum is kept).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ppdp import noise
from ppdp.accounting import Accountant
from ppdp.accounting.events import (
    Composed,
    EpsilonDelta,
    Exponential,
    GammaNorm,
    Gaussian,
    Laplace,
    ObjectivePerturbation,
    Parallel,
)
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.data import Schema
from ppdp.learn import PrivateLinearSVM, PrivateLogisticRegression, PrivateRBFSVM
from ppdp.learn._erm import objective_perturbation_constants
from ppdp.learn.rbf_svm import output_mechanism
from ppdp.publish import baselines
from ppdp.publish.baselines import ExponentialPublisher, record_l1_sensitivity

dpa = pytest.importorskip("dp_accounting")

TOTAL = PrivacyBudget(4.0, 1e-5)
REPLACE = Neighbouring.REPLACE_ONE


def _data(n: int = 300, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _capture_gamma_norm(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    calls: list[dict] = []
    real = noise.gamma_norm_vector

    def spy(dim, scale, **kw):
        calls.append({"dim": dim, "scale": scale, **kw})
        return real(dim, scale, **kw)

    monkeypatch.setattr(noise, "gamma_norm_vector", spy)
    return calls


def _pld_pure(epsilons: list[float], delta: float) -> float:
    pld = dpa.pld.privacy_loss_distribution
    acc = pld.identity(value_discretization_interval=1e-4)
    for e in epsilons:
        p = dpa.pld.common.DifferentialPrivacyParameters(e, 0.0)
        acc = acc.compose(pld.from_privacy_parameters(p, value_discretization_interval=1e-4))
    return float(acc.get_epsilon_for_delta(delta))


def _tight_or_basic(tight: float, basic: float) -> float:
    return min(tight, basic)


# ------------------------------------------------------------------------- output perturbation


@pytest.mark.parametrize("cls", [PrivateLogisticRegression, PrivateLinearSVM])
def test_output_perturbation_charges_the_gamma_norm_it_draws(monkeypatch, cls) -> None:
    X, y = _data()
    calls = _capture_gamma_norm(monkeypatch)
    with Accountant.in_memory(total=TOTAL, relation=REPLACE) as acct:
        model = cls(
            epsilon=0.7, data_norm=3.0, perturbation="output", regularization=0.01, random_state=1
        )
        model.fit(X, y, accountant=acct, allow_seeded=True)
        (record,) = acct.history()
    assert len(calls) == 1
    ev = record.event
    assert isinstance(ev, GammaNorm)
    draw = calls[0]
    assert (ev.dimension, ev.scale, ev.granularity) == (
        draw["dim"],
        draw["scale"],
        draw["granularity"],
    )
    k = model.guarantee_.details
    assert ev.l2_sensitivity == k["sensitivity"]  # 2/(nΛ) + 2τ/Λ
    # the drawn scale gives (Δ + √d·Λ)/scale = ε, the charge
    exact = (
        Fraction(ev.l2_sensitivity) + Fraction(math.sqrt(ev.dimension)) * Fraction(ev.granularity)
    ) / Fraction(ev.scale)
    assert float(exact) == pytest.approx(0.7, rel=1e-12)
    assert record.epsilon == 0.7 and record.delta == 0.0
    # a broken variant (half the scale) is not what was charged
    assert ev != GammaNorm(
        l2_sensitivity=ev.l2_sensitivity,
        scale=2 * ev.scale,
        dimension=ev.dimension,
        granularity=ev.granularity,
    )


def test_objective_perturbation_charges_both_of_its_draws(monkeypatch) -> None:
    X, y = _data()
    calls = _capture_gamma_norm(monkeypatch)
    eps = 0.9
    with Accountant.in_memory(total=TOTAL, relation=REPLACE) as acct:
        model = PrivateLogisticRegression(epsilon=eps, data_norm=3.0, random_state=2)
        model.fit(X, y, accountant=acct, allow_seeded=True)
        (record,) = acct.history()
    assert isinstance(record.event, Composed)
    obj, res = record.event.events
    assert isinstance(obj, ObjectivePerturbation) and isinstance(res, GammaNorm)
    b_draw, v_draw = calls
    # b: Algorithm 2's noise at ε_obj (continuous), whose scale 2/ε' follows from ε_obj alone
    assert b_draw["rounded"] is False
    d = model.guarantee_.details
    alone = objective_perturbation_constants(obj.epsilon, X.shape[0], d["regularization"], 0.25)
    assert b_draw["scale"] == alone.noise_scale
    # v: the residual step's Gamma-norm draw on its grid, at ε_r
    assert (res.dimension, res.scale, res.granularity) == (
        v_draw["dim"],
        v_draw["scale"],
        v_draw["granularity"],
    )
    assert res.epsilon == pytest.approx(0.01 * eps, rel=1e-12)
    assert res.l2_sensitivity == d["residual_sensitivity"]
    # the two draws cost exactly ε under basic composition
    assert record.epsilon == eps


def test_before_the_data_the_learner_states_its_epsilon() -> None:
    for pert, kind in [("objective", ObjectivePerturbation), ("output", EpsilonDelta)]:
        (ev,) = PrivateLogisticRegression(
            epsilon=0.5, data_norm=1.0, perturbation=pert
        ).privacy_events()
        assert isinstance(ev, kind) and ev.budget() == PrivacyBudget(0.5)


def test_objective_fits_under_pld_agree_with_dp_accounting() -> None:
    X, y = _data()
    with Accountant.in_memory(total=TOTAL, relation=REPLACE, composition="pld") as acct:
        for seed in range(3):
            PrivateLogisticRegression(epsilon=1.0, data_norm=3.0, random_state=seed).fit(
                X, y, accountant=acct, allow_seeded=True
            )
        leaves = [e for r in acct.history() for e in r.event.leaves()]
        spent = acct.spent.epsilon
    eps = [e.budget().epsilon for e in leaves]
    direct = _pld_pure(eps, TOTAL.delta)
    assert direct < 3.0  # the library's bound is the smaller here
    assert spent == pytest.approx(direct, abs=1e-9)


# ------------------------------------------------------------------------------- RBF SVM


def test_rbf_svm_charges_its_laplace_output_mechanism() -> None:
    X, y = _data(n=200, d=2)
    with Accountant.in_memory(total=TOTAL, relation=REPLACE) as acct:
        svm = PrivateRBFSVM(epsilon=0.8, C=2.0, gamma=1.0, n_components=10, random_state=0)
        svm.fit(X, y, accountant=acct, allow_seeded=True)
        (record,) = acct.history()
    mech = output_mechanism(epsilon=0.8, C=2.0, n_components=10, n=200)
    assert record.event == mech.event
    assert isinstance(record.event, Laplace) and record.event.scale == svm.noise_scale_
    assert record.event.dimension == 20  # 2D coordinates


def test_rbf_svm_private_tuning_is_a_parallel_event() -> None:
    X, y = _data(n=240, d=2)
    grid = {"C": [1.0, 4.0], "n_components": [5]}
    svm = PrivateRBFSVM(epsilon=0.5, gamma=1.0, tuning="private", param_grid=grid, random_state=0)
    with Accountant.in_memory(total=TOTAL, relation=REPLACE, composition="pld") as acct:
        svm.fit(X, y, accountant=acct, allow_seeded=True)
        (record,) = acct.history()
        spent = acct.spent.epsilon
    ev = record.event
    assert isinstance(ev, Parallel) and len(ev.events) == 3
    *fits, choice = ev.events
    assert all(isinstance(e, Laplace) for e in fits) and choice == Exponential(epsilon=0.5)
    assert fits[0].l1_sensitivity != fits[1].l1_sensitivity  # two C values: not uniform
    assert ev.envelope() == EpsilonDelta(epsilon=0.5)
    assert spent == pytest.approx(_tight_or_basic(_pld_pure([0.5], 1e-5), 0.5), abs=1e-9)


# ---------------------------------------------------------------------------- EXP baseline


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
                {"name": "c", "type": "categorical", "categories": ["a", "b", "c"]},
            ],
            "label": {"name": "y", "classes": [0, 1]},
        }
    )


def _table(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "c": rng.choice(["a", "b", "c"], n),
            "y": rng.integers(0, 2, n),
        }
    )


def test_exp_baseline_charges_the_exponential_mechanism_it_samples(monkeypatch, schema) -> None:
    seen: list[tuple[float, float]] = []
    real = baselines._truncated_laplace_unit

    def spy(centre, scale, granularity, source):
        seen.append((scale, granularity))
        return real(centre, scale, granularity, source)

    monkeypatch.setattr(baselines, "_truncated_laplace_unit", spy)
    with Accountant.in_memory(total=TOTAL, relation=REPLACE) as acct:
        ExponentialPublisher(0.6, schema, random_state=0).fit(_table(), acct, allow_seeded=True)
        (record,) = acct.history()
    assert record.event == Exponential(epsilon=0.6)
    ((scale, lam),) = seen
    layout = schema.layout(include_label=True)
    du = record_l1_sensitivity(layout)
    # density ∝ exp(−ε‖x − r‖₁/(2Δ)) with Δ = Δu + p·Λ (the snapped centre): the EM at ε
    assert scale == pytest.approx(2 * (du + layout.n_features * lam) / 0.6, rel=1e-12)


def test_exp_baseline_under_rdp_uses_the_bounded_range_bound(schema) -> None:
    n_rel = 12
    with Accountant.in_memory(total=TOTAL, relation=REPLACE, composition="rdp") as acct:
        for seed in range(n_rel):
            ExponentialPublisher(0.3, schema, random_state=seed).fit(
                _table(), acct, allow_seeded=True
            )
        spent = acct.spent.epsilon
    direct = dpa.rdp.RdpAccountant()
    direct.compose(dpa.SelfComposedDpEvent(dpa.ZCDpEvent(0.3**2 / 8), n_rel))
    ref = direct.get_epsilon(TOTAL.delta)
    assert ref < n_rel * 0.3
    assert spent == pytest.approx(ref, abs=1e-9)
    # the generic ε²/2 conversion would have charged more
    generic = dpa.rdp.RdpAccountant()
    generic.compose(dpa.SelfComposedDpEvent(dpa.ZCDpEvent(0.3**2 / 2), n_rel))
    assert spent < generic.get_epsilon(TOTAL.delta)


# ----------------------------------------------------------------------- Mul-LDA-DP round


def _round_data(n: int = 300, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) + np.where(rng.random(n) < 0.5, 1.0, -1.0)[:, None] * 0.5
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("release", ["direction", "noisy-projections"])
def test_federated_round_charges_the_gaussians_of_the_joint_view(release, tmp_path) -> None:
    from ppdp.accounting import budget_report
    from ppdp.federated.calibration import joint_view_factor_closed_form
    from ppdp.federated.simulate import simulate_round

    X, y = _round_data()
    parts = [(X[j::2], y[j::2]) for j in range(2)]
    res = simulate_round(
        parts, epsilon=1.0, delta=1e-5, release=release, random_state=4, workdir=tmp_path
    )
    assert res.state == "done"
    (spend,) = budget_report(res.ledger_path).spends
    ev = spend.event
    assert isinstance(ev, Composed)
    sums, second = ev.events[:2]
    fp = res.plan
    assert isinstance(sums, Gaussian) and isinstance(second, Gaussian)
    # the σ the aggregate carries (owners' noise adds up to it; the masks cancel)
    assert all(sums.sigma == s for s in fp.sum_sigmas)
    assert second.sigma == fp.second_moment_sigma
    # the sensitivity covers the whitened joint view's f·(Δ + √dim·Λ)
    f = joint_view_factor_closed_form(2, fp.mask_scale)
    for g, delta_s, grid in [
        (sums, 2.0, fp.sum_grid),
        (second, math.sqrt(2), fp.second_moment_grid),
    ]:
        assert float(g.effective_sensitivity) >= f * (delta_s + math.sqrt(g.dimension) * grid)
    if release == "noisy-projections":
        assert ev.events[2] == EpsilonDelta(epsilon=0.5)
    assert spend.epsilon <= 1.0 and spend.delta <= 1e-5


def test_federated_events_under_pld_agree_with_dp_accounting() -> None:
    from ppdp.federated.config import RoundConfig

    cfg = RoundConfig(
        session_id="s",
        publisher="p",
        owners=("a", "b", "c"),
        dealer="d",
        epsilon=0.5,
        delta=1e-6,
        n_features=4,
        classes=(0, 1),
        class_counts=(80, 70),
    )
    events = cfg.plan().events(stated=cfg.budget)
    with Accountant.in_memory(total=TOTAL, relation=REPLACE, composition="pld") as acct:
        for _ in range(6):
            acct.spend(Composed(events=events), mechanism="Mul-LDA-DP round")
        spent = acct.spent.epsilon
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    for _ in range(6):
        for g in events:
            acc.compose(dpa.GaussianDpEvent(g.noise_multiplier))
    direct = acc.get_epsilon(TOTAL.delta)
    assert direct < 6 * 0.5
    assert spent == pytest.approx(direct, abs=1e-9)


# ------------------------------------------------------------- what a dry run says remains


def test_remaining_after_composes_under_pld_and_subtracts_under_basic() -> None:
    g = Gaussian(l2_sensitivity=1.0, sigma=5.0, epsilon=1.0, delta=1e-6)
    with Accountant.in_memory(total=TOTAL, composition="basic") as acct:
        acct.spend(g, mechanism="g")
        assert acct.remaining_after(g) == PrivacyBudget(2.0, 8e-6)
        assert acct.remaining_after(Composed(events=(g,) * 3)) == PrivacyBudget(0.0, 6e-6)
        assert acct.remaining_after(Composed(events=(g,) * 4)) is None  # 5 > ε total
    with Accountant.in_memory(total=TOTAL, composition="pld") as acct:
        acct.spend(g, mechanism="g")
        after = acct.remaining_after(g)
        assert acct.remaining.epsilon == pytest.approx(4.0 - acct.spent.epsilon)
        acct.spend(g, mechanism="g")  # the prediction is what charging it leaves
        assert after == acct.remaining
        assert after.epsilon > 4.0 - 2 * 1.0  # composing beats subtracting the stated ε


def test_private_tuning_charges_each_candidates_fit_on_its_part(monkeypatch) -> None:
    from ppdp.learn.tuning import PrivateTuning

    X, y = _data(n=301)
    calls = _capture_gamma_norm(monkeypatch)
    tuning = PrivateTuning(regularization_grid=(0.01, 0.1))
    with Accountant.in_memory(total=TOTAL, relation=REPLACE, composition="pld") as acct:
        PrivateLogisticRegression(
            epsilon=0.5, data_norm=3.0, perturbation="output", tuning=tuning, random_state=0
        ).fit(X, y, accountant=acct, allow_seeded=True)
        (record,) = acct.history()
        spent = acct.spent.epsilon
    ev = record.event
    assert isinstance(ev, Parallel)
    *fits, choice = ev.events
    assert choice == Exponential(epsilon=0.5)
    # one Gamma-norm draw per candidate, on its part (sizes 101, 100), at its Λ
    assert [(f.scale, f.granularity) for f in fits] == [
        (c["scale"], c["granularity"]) for c in calls
    ]
    assert fits[0].l2_sensitivity > 2 / (101 * 0.01)  # the part's n, not the whole n
    assert record.epsilon == 0.5
    assert spent == pytest.approx(min(_pld_pure([0.5], 1e-5), 0.5), abs=1e-9)


def test_a_tight_refusal_is_one_line_with_a_readable_composed_epsilon() -> None:
    import re

    from ppdp.accounting._accountant import _above
    from ppdp.exceptions import BudgetExceededError

    acct = Accountant.in_memory(total=TOTAL, composition="pld")
    with acct, pytest.raises(BudgetExceededError) as info:
        acct.spend(EpsilonDelta(epsilon=4.3), mechanism="big")
    msg = str(info.value)
    assert "\n" not in msg and "nothing was charged" in msg
    (shown,) = re.findall(r"would be (\S+) > 4;", msg)
    assert len(shown.replace(".", "")) <= 6 and float(shown) > 4.0
    # six digits that would read as the limit itself are given in full
    assert _above(4.0000001, 4.0) == "4.0000001" and _above(4.123456789, 4.0) == "4.12346"


def test_owners_refuse_a_round_charged_with_other_events(monkeypatch) -> None:
    """A publisher that charges only the stated (ε, δ) instead of the joint view's Gaussians
    is caught by every owner's replica check: the round aborts before any share leaves."""
    from ppdp.accounting import Charge
    from ppdp.federated import roles
    from ppdp.federated.simulate import simulate_round

    def stated_only(self):
        return Charge(
            self.config.budget, "Mul-LDA-DP round", {"session_id": self.config.session_id}
        )

    X, y = _round_data()
    parts = [(X[j::2], y[j::2]) for j in range(2)]
    honest = simulate_round(parts, epsilon=1.0, delta=1e-5, random_state=4)
    assert honest.state == "done"
    monkeypatch.setattr(roles.FederatedPublisher, "_planned_charge", stated_only)
    res = simulate_round(parts, epsilon=1.0, delta=1e-5, random_state=4)
    assert res.state != "done" and res.direction is None
    assert "differs from its budget" in (res.abort_reason or "")
